"""minigrad.nn: modules, layers and initialisers. `import nn` and `from minigrad import nn` are
the same package."""

from . import functional, init, utils
from .attention import *  # noqa: F401,F403
from .embedding import *  # noqa: F401,F403
from .layers import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .lstm import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .module import Module, ModuleList, Parameter, Sequential
