"""torch.cuda's questions, answered for a CPU-only engine: no CUDA device is available.

    device = "cuda" if mg.cuda.is_available() else "cpu"   # "cpu"
    mg.cuda.manual_seed_all(1337)                           # nothing to seed

What asks for a CUDA device itself (current_device, get_device_name, synchronize, ...) raises
an error naming it, as torch built without CUDA does.
"""

from ..ops.args import check_device
from . import amp


def is_available():
    """False: minigrad has no CUDA device."""
    return False


def device_count():
    """0 CUDA devices."""
    return 0


def is_bf16_supported(including_emulation=True):
    """False: no CUDA device, and minigrad has no bfloat16."""
    return False


def manual_seed(seed):
    """Nothing to seed (no CUDA device); mg.manual_seed seeds minigrad's generator."""


def manual_seed_all(seed):
    """Nothing to seed (no CUDA device); mg.manual_seed seeds minigrad's generator."""


def empty_cache():
    """Nothing cached (no CUDA device)."""


def _needs_a_device(name):
    def refused(*args, **kwargs):
        check_device("cuda", f"mg.cuda.{name}")

    refused.__name__ = name
    refused.__doc__ = "Refused: there is no CUDA device."
    return refused


current_device = _needs_a_device("current_device")
get_device_name = _needs_a_device("get_device_name")
set_device = _needs_a_device("set_device")
synchronize = _needs_a_device("synchronize")
