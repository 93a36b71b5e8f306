"""Reading what the page sends: every field is checked here, and anything wrong raises
LabInputError with a message the page shows as it is (what was expected, what was given).

The page sends the text of its input boxes as it is ("2", "-0.5", "abc"); numbers are parsed
here, never in JavaScript, so that one place decides what counts as a number.
"""

import math
import re

import numpy as np


class LabInputError(ValueError):
    """A request the lab cannot use; the message is meant for the person at the page."""


def _shown(value, limit=30):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def number(name, value, low, high):
    """A finite float in [low, high], from a JSON number or the text of an input box."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise LabInputError(
            f"{name}: expected a number between {low:g} and {high:g}; got {_shown(value)}"
        )
    try:
        parsed = float(value.strip()) if isinstance(value, str) else float(value)
    except (ValueError, OverflowError):
        raise LabInputError(
            f"{name}: expected a number between {low:g} and {high:g}; got {_shown(value)}"
        ) from None
    if not math.isfinite(parsed):
        raise LabInputError(
            f"{name}: expected a finite number between {low:g} and {high:g}; got {_shown(value)}"
        )
    if not low <= parsed <= high:
        raise LabInputError(
            f"{name}: expected a number between {low:g} and {high:g}; got {parsed:g}"
        )
    return parsed


def integer(name, value, low, high):
    """An int in [low, high]; a float with a fractional part is refused."""
    parsed = number(name, value, low, high)
    if parsed != int(parsed):
        raise LabInputError(
            f"{name}: expected a whole number between {low} and {high}; got {parsed:g}"
        )
    return int(parsed)


def flag(name, value):
    if not isinstance(value, bool):
        raise LabInputError(f"{name}: expected true or false; got {_shown(value)}")
    return value


def choice(name, value, options):
    if value not in options:
        raise LabInputError(
            f"{name}: expected one of {', '.join(map(str, options))}; got {_shown(value)}"
        )
    return value


def matrix(name, value, shape, limit):
    """A nested list of the given shape (rows, columns) -> float32 array, each entry checked."""
    rows, columns = shape
    if (
        not isinstance(value, list)
        or len(value) != rows
        or any(not isinstance(row, list) or len(row) != columns for row in value)
    ):
        got = (
            f"{len(value)} rows of lengths "
            f"{[len(r) if isinstance(r, list) else None for r in value][:6]}"
            if isinstance(value, list)
            else _shown(value)
        )
        raise LabInputError(
            f"{name}: expected a {rows} x {columns} matrix ({rows} rows of {columns} numbers); "
            f"got {got}"
        )
    return np.array(
        [
            [
                number(f"{name}[{i + 1}][{j + 1}]", entry, -limit, limit)
                for j, entry in enumerate(row)
            ]
            for i, row in enumerate(value)
        ],
        dtype=np.float32,
    )


def text(name, value, max_characters, allow_empty=False):
    if not isinstance(value, str):
        raise LabInputError(f"{name}: expected text; got {_shown(value)}")
    if len(value) > max_characters:
        raise LabInputError(f"{name}: at most {max_characters:,} characters; got {len(value):,}")
    if not allow_empty and not value.strip():
        raise LabInputError(f"{name}: expected some text; got nothing")
    return value


_SESSION = re.compile(r"[A-Za-z0-9_-]{1,64}")


def session_id(value):
    """The id a browser tab made for itself: 1 to 64 letters, digits, '-' or '_'."""
    if not isinstance(value, str) or not _SESSION.fullmatch(value):
        raise LabInputError(
            f"session: expected an id of 1 to 64 letters, digits, '-' or '_'; got {_shown(value)}"
        )
    return value


def plain(array):
    """A numpy array (or number) as JSON-ready lists of floats; NaN and infinities become None,
    since JSON has no such numbers (the page says the training diverged instead)."""
    array = np.asarray(array, dtype=np.float64)
    if array.ndim == 0:
        value = float(array)
        return value if math.isfinite(value) else None
    return array.tolist() if np.isfinite(array).all() else _nan_to_none(array.tolist())


def _nan_to_none(values):
    if isinstance(values, list):
        return [_nan_to_none(v) for v in values]
    return values if math.isfinite(values) else None
