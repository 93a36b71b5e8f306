"""Plain-numpy twins of every kernel: the reference the Numba kernels are tested against.

`MINIGRAD_KERNELS=numpy` makes the engine call these instead of the Numba versions. The twins of
kernels/<file>.py are in reference/<file>.py, with the same names, signatures and contracts; the
contracts are written there once. All take and return numpy arrays and keep the floating dtype
of their input (float32 or float64). Each twin is also a name of this package
(`reference.softmax_forward`), for the kernels listed in kernels.KERNELS_BY_FILE.
"""

from .. import _kernels_of

globals().update(_kernels_of(__name__))
