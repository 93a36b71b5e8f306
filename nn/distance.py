"""torch.nn.modules.distance: CosineSimilarity and PairwiseDistance, the functions of the same
names in nn.functional as modules of two inputs."""

from . import functional as F
from .module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """F.cosine_similarity(x1, x2, dim, eps): the cosine of the angle between x1 and x2 along
    dim."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """F.pairwise_distance(x1, x2, p, eps, keepdim): |x1 - x2 + eps|_p along the last dim."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim  # torch's attribute name for p

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
