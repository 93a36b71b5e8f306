"""torch.backends' flags as scripts read and set them; none changes what minigrad computes.

    mg.backends.cuda.matmul.allow_tf32 = True    # nanoGPT's first lines: accepted, no effect
    import minigrad.backends.cudnn as cudnn       # dcgan's import
    cudnn.benchmark = True
    use_mps = mg.backends.mps.is_available()      # False

minigrad computes in float32 or float64 exactly as asked on the CPU (no TF32, no cuDNN, no
autotuning), so each flag is a plain attribute with torch's default on a machine without CUDA,
kept for the script that reads it back. Submodules as torch's: cudnn, cuda, mps.
"""

from ..errors import ArgumentError
from . import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]

_PRECISIONS = ("highest", "high", "medium")
_precision = "highest"


def set_float32_matmul_precision(precision):
    """torch.set_float32_matmul_precision: 'highest' (the default), 'high' or 'medium'. minigrad
    multiplies float32 in float32 whatever is set; as torch's, 'high' and 'medium' also set
    backends.cuda.matmul.allow_tf32 (read back, no effect here)."""
    global _precision
    if precision not in _PRECISIONS:
        raise ArgumentError(
            f"set_float32_matmul_precision: expected one of {', '.join(_PRECISIONS)}; "
            f"got {precision!r}"
        )
    _precision = precision
    cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    return _precision
