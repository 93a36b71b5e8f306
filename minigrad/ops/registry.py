"""The one registration point of the ops: a declaration next to each op's definition.

    @op                                 mg.name, x.name() and minigrad.__all__ (the usual case)
    @op(method=False)                   mg.name only (mg.cat, mg.einsum: no x.cat())
    @op(public=False)                   x.name() only (x.view_as, x.contiguous)
    @op(method=False, public=False)     minigrad.ops.name only (the layers' ops: nn.functional's)
    clip = op(clamp, name="clip")       another name of the same function

Every declared op is an attribute of `minigrad.ops`. `ops/__init__.py` attaches the methods
(the function itself is the method: no wrapper between x.exp() and exp(x)) and
`minigrad/__init__.py` takes the public names, exporting in `__all__` all but those that would
shadow Python's builtins (sum, max, abs, round ...: reached as mg.sum, never by `import *`).
"""

import builtins
import sys
from typing import Callable, NamedTuple


class Entry(NamedTuple):
    """One declared op: its function, the family file that declares it, and where it appears."""

    function: Callable
    family: str  # the module's name below minigrad.ops ("arithmetic", "losses.margin")
    method: bool  # a Tensor method of the same name
    public: bool  # an mg. name


OPS = {}  # name -> Entry, in declaration order


def op(function=None, *, name=None, method=True, public=True):
    """Declare `function` an op under `name` (default: its __name__); returns it unchanged.

    Used bare (`@op`), with settings (`@op(method=False)`) or as a call (`op(f, name=...)`).
    Declaring a name twice is an error: one op, one declaration."""
    # the family is the file that declares the op (a factory's function names the factory's file)
    family = sys._getframe(1).f_globals["__name__"].removeprefix("minigrad.ops.")

    def declare(function):
        key = name or function.__name__
        if key in OPS:
            raise RuntimeError(
                f"op {key!r} is declared twice: in ops.{OPS[key].family} and in ops.{family}"
            )
        OPS[key] = Entry(function, family, method, public)
        return function

    return declare if function is None else declare(function)


def methods():
    """name -> function of every op that is also a Tensor method."""
    return {name: entry.function for name, entry in OPS.items() if entry.method}


def public_names():
    """name -> function of every op that is an mg. name."""
    return {name: entry.function for name, entry in OPS.items() if entry.public}


def exported():
    """The public names `from minigrad import *` gives: none that shadows a Python builtin."""
    return [name for name in public_names() if not hasattr(builtins, name)]


def families():
    """family -> the names it declares, in declaration order (what the index of ops lists)."""
    index = {}
    for name, entry in OPS.items():
        index.setdefault(entry.family, []).append(name)
    return index
