"""torch.backends.mps's questions: no Metal device here."""


def is_available():
    return False


def is_built():
    return False
