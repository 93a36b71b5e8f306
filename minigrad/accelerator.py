"""torch.accelerator's questions (PyTorch 2.6+ scripts choose their device with them): minigrad
has no accelerator.

    device = mg.accelerator.current_accelerator() if mg.accelerator.is_available() else "cpu"
"""


def is_available():
    """False: minigrad computes on the CPU only."""
    return False


def current_accelerator(check_available=False):
    """None: there is no accelerator."""
    return None


def device_count():
    """0 accelerators."""
    return 0
