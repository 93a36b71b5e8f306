"""torch.backends' flags as scripts read and set them; none changes what minigrad computes.

    mg.backends.cuda.matmul.allow_tf32 = True   # nanoGPT's first lines: accepted, no effect
    mg.backends.cudnn.benchmark = True
    use_mps = mg.backends.mps.is_available()     # False

minigrad computes in float32 or float64 exactly as asked on the CPU (no TF32, no cuDNN, no
autotuning), so each flag is a plain attribute with torch's default, kept for the script that
reads it back.
"""

from types import SimpleNamespace


def _no_device():
    return False


# torch.backends.cudnn: torch's defaults on a machine without CUDA
cudnn = SimpleNamespace(
    enabled=True,
    benchmark=False,
    deterministic=False,
    allow_tf32=True,
    is_available=_no_device,
)
cuda = SimpleNamespace(
    matmul=SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True),
    is_built=_no_device,
)
mps = SimpleNamespace(is_available=_no_device, is_built=_no_device)
