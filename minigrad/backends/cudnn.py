"""torch.backends.cudnn's flags (torch's defaults; no cuDNN here, so none has an effect)."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    """False: minigrad has no cuDNN."""
    return False


def version():
    """None, as torch without cuDNN."""
    return None
