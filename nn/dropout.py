"""torch.nn.modules.dropout: Dropout, and the channel and alpha dropout layers Dropout1d,
Dropout2d, AlphaDropout and FeatureAlphaDropout, which keep nn.Dropout's p and inplace over the
functions of minigrad/ops/dropout.py."""

from . import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout"]


class Dropout(Module):
    """Zero each element with probability p and scale the rest by 1/(1-p) while training;
    the identity after eval()."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1]; got {p}")
        self.p, self.inplace = float(p), bool(inplace)

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """torch.nn.Dropout1d: (N, C, L) or (C, L), whole channels zeroed with probability p while
    training."""

    def forward(self, x):
        return F.dropout1d(x, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """torch.nn.Dropout2d: (N, C, H, W), whole channels zeroed with probability p while training (a
    3-D input is taken as (N, C, L), with torch's warning)."""

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
