"""The exceptions minigrad raises for a user's mistakes.

Each derives from the Python exception a Pythonic caller expects (ValueError for a bad shape,
TypeError for a bad dtype, IndexError for a dim out of range) and from RuntimeError, which is
what PyTorch raises: code written for either catches them.
"""


class ShapeError(ValueError, RuntimeError):
    """Shapes that do not fit together (names both shapes)."""


class DTypeError(TypeError, ValueError, RuntimeError):
    """A dtype the operation cannot take (names the expected and the given dtype)."""


class DimError(IndexError, ValueError, RuntimeError):
    """A dim out of range for the tensor (names the dim and the tensor's number of dims)."""


class ArgumentError(ValueError, RuntimeError):
    """An argument value the operation cannot take (chunk(0), a bad einsum equation, ...)."""


class IndexRangeError(IndexError, RuntimeError):
    """Index values outside the size of the dim they index (gather, scatter; names both)."""
