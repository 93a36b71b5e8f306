"""torch.backends.cuda's flags (torch's defaults; no CUDA here, so none has an effect)."""

from types import SimpleNamespace

matmul = SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True)


def is_built():
    """False: minigrad is not built with CUDA."""
    return False
