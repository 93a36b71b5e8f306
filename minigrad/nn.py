"""The door behind `import minigrad.nn` and `import minigrad.nn.functional as F` (torch's
spelling): importing this module loads the top-level `nn` package and puts it in this module's
place, the same lazy door as `mg.nn` in minigrad/__init__.py. Nothing of the engine imports it."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("nn")
