"""Small layers without weights: Dropout and the activations, as modules for Sequential."""

import minigrad as mg

from .module import Module


class Dropout(Module):
    """Zero each element with probability p and scale the rest by 1/(1-p) while training;
    the identity after eval()."""

    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p < 1:
            raise ValueError(f"Dropout: p must be in [0, 1); got {p}")
        self.p = float(p)

    def forward(self, x):
        return mg.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class Tanh(Module):
    def forward(self, x):
        return mg.tanh(x)


class ReLU(Module):
    def forward(self, x):
        return mg.relu(x)


class Sigmoid(Module):
    def forward(self, x):
        return mg.sigmoid(x)


class Identity(Module):
    """Returns its input unchanged (a placeholder where a layer is optional)."""

    def forward(self, x):
        return x


__all__ = ["Dropout", "Tanh", "ReLU", "Sigmoid", "Identity"]
