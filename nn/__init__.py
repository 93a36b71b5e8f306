"""minigrad.nn: modules, layers, losses and initialisers (`from minigrad import nn`,
`import minigrad.nn.functional as F`). The source is the repository's top-level nn/ folder,
installed as the package minigrad.nn (pyproject.toml); it has no other name. Its files are
named as torch's torch/nn/modules/ files are (activation.py, dropout.py, rnn.py,
transformer.py ...); the chapter's own modules are in files named for them (attention.py,
attention_pooling.py, transformer_block.py)."""

from . import functional, init, parallel, utils
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .attention_pooling import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .containers import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .embedding import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .lstm_embedded import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .multihead_attention import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .rnn_cell import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .transformer_block import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .module import Module, Parameter
