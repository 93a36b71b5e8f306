"""minigrad.nn: modules, layers, losses and initialisers (`from minigrad import nn`,
`import minigrad.nn.functional as F`). The source is the repository's top-level nn/ folder,
installed as the package minigrad.nn (pyproject.toml); it has no other name."""

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
