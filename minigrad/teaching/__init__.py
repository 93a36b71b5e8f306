"""Exercises that plug into the real engine (notebooks/exercises/, notebooks/README.md).

    from minigrad.teaching import check_function, check_array, swap, ExerciseError

checks.py: a check of a student's Function or array whose failure says what to change (the
output or gradient, the index, the student's value, the finite-difference value and
minigrad's, the expected shape). swap.py: the student's softmax or attention in place of
minigrad's own for a `with` block, compared with minigrad's at every call.
"""

from .checks import ExerciseError, check_array, check_function, finite_differences, run_student
from .swap import scale_for, swap

__all__ = ["ExerciseError", "check_array", "check_function", "finite_differences"]
__all__ += ["run_student", "scale_for", "swap"]
