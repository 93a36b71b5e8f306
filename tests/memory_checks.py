"""What the hostile-file tests share: how much memory a refusal took."""

import tracemalloc


def peak_bytes(action):
    """(exception raised by action(), peak bytes allocated meanwhile, numpy's included)."""
    tracemalloc.start()
    try:
        action()
    except Exception as error:  # noqa: BLE001  (returned for the test to check)
        raised = error
    else:
        raised = None
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return raised, peak
