"""minigrad.nn: modules, layers, losses and initialisers. `import nn`, `from minigrad import nn`
and `import minigrad.nn` are the same package, and `import minigrad.nn.functional as F` is
nn.functional (see the end of this file)."""

import sys as _sys

from . import functional, init, utils
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .containers import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .embedding import *  # noqa: F401,F403
from .gru import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .lstm import *  # noqa: F401,F403
from .multihead import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .module import Module, Parameter

# This package lives at the top level as `nn`. Registering its modules under `minigrad.nn.*` too
# makes `import minigrad.nn.functional` find these objects instead of loading second copies.
for _name, _module in list(_sys.modules.items()):
    if _name == __name__ or _name.startswith(__name__ + "."):
        _sys.modules.setdefault("minigrad." + _name, _module)
