"""Channel and alpha dropout layers, as torch's Dropout1d, Dropout2d, AlphaDropout and
FeatureAlphaDropout: nn.Dropout's p and inplace over the functions of minigrad/ops/dropout.py."""

from . import functional as F
from .layers import Dropout

__all__ = ["Dropout1d", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout"]


class Dropout1d(Dropout):
    """torch.nn.Dropout1d: (N, C, L) or (C, L), whole channels zeroed with probability p while training."""

    def forward(self, x):
        return F.dropout1d(x, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """torch.nn.Dropout2d: (N, C, H, W), whole channels zeroed with probability p while training (a 3-D
    input is taken as (N, C, L), with torch's warning)."""

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, self.inplace)


class AlphaDropout(Dropout):
    """torch.nn.AlphaDropout: dropout that keeps a SELU network's mean 0 and variance 1."""

    def forward(self, x):
        return F.alpha_dropout(x, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    """torch.nn.FeatureAlphaDropout: alpha dropout of whole channels of (N, C, ...)."""

    def forward(self, x):
        return F.feature_alpha_dropout(x, self.p, self.training, self.inplace)
