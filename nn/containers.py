"""torch.nn.modules.container: containers that register what they hold: Sequential, ModuleList,
ModuleDict, ParameterList, ParameterDict. Their entries get dotted names ('layers.0.weight',
'heads.query.weight'), so parameters(), state_dict() and to(dtype) reach them; a plain Python list
would hide them.
"""

from collections import OrderedDict

import numpy as np

from minigrad.engine import Tensor
from minigrad.parameter import Parameter

from .module import Module, _module_repr


def _position(index, length, kind):
    """An int index in [-length, length) -> [0, length)."""
    if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
        raise TypeError(f"{kind} indices must be integers or slices; got {type(index).__name__}")
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range for a {kind} of length {length}")
    return int(index) % length


class _ModuleSequence(Module):
    """What ModuleList and Sequential share: torch's list operations. Entries are named by
    position ('0', '1', ...); inserting or deleting renumbers them, as torch does."""

    def _renumber(self, modules):
        self._modules.clear()
        for module in modules:
            self.append(module)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        modules = list(self._modules.values())
        modules.insert(index, module)
        self._renumber(modules)

    def pop(self, index=-1):
        """Remove the module at `index` (the last by default) and return it."""
        module = self[index]
        del self[index]
        return module

    def __setitem__(self, index, module):
        self.add_module(
            list(self._modules)[_position(index, len(self), type(self).__name__)], module
        )

    def __delitem__(self, index):
        modules = list(self._modules.values())
        del modules[
            index if isinstance(index, slice) else _position(index, len(self), type(self).__name__)
        ]
        self._renumber(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        """A new container holding this one's modules, then other's (the same objects, as torch)."""
        if not isinstance(other, _ModuleSequence):
            return NotImplemented
        return type(self)().extend(list(self) + list(other))

    def __mul__(self, count):
        """A new container holding this one's modules `count` times (the same objects, as torch)."""
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
            raise ValueError(
                f"{type(self).__name__} can be multiplied by a positive integer; got {count!r}"
            )
        return type(self)().extend(list(self) * int(count))

    __rmul__ = __mul__


class ModuleList(_ModuleSequence):
    """A list of modules whose parameters are registered (names '0', '1', ...)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[list(self._modules)[_position(index, len(self), type(self).__name__)]]

    def __repr__(self):
        """As torch's: runs of identical consecutive entries collapse to '(0-2): 3 x
        Linear(...)'."""
        names, texts = list(self._modules), [repr(module) for module in self._modules.values()]
        children, start = [], 0
        while start < len(texts):
            stop = start + 1
            while stop < len(texts) and texts[stop] == texts[start]:
                stop += 1
            if stop - start == 1:
                children.append((f"({names[start]})", texts[start]))
            else:
                children.append(
                    (f"({names[start]}-{names[stop - 1]})", f"{stop - start} x {texts[start]}")
                )
            start = stop
        return _module_repr(self, children)


class Sequential(_ModuleSequence):
    """Modules applied one after another: Sequential(Linear(2, 8), Tanh(), Linear(8, 1)), or
    Sequential(OrderedDict(name=module, ...)) to choose the names. List operations as torch's
    (append, extend, insert, pop, seq[i] = m, del seq[i], +, +=)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for index, module in enumerate(modules):
                self.add_module(str(index), module)

    def __getitem__(self, index):
        items = list(self._modules.items())
        if isinstance(index, slice):
            return type(self)(OrderedDict(items[index]))
        return items[_position(index, len(items), "Sequential")][1]

    def forward(self, x):
        for module in self:
            x = module(x)
        return x


class ModuleDict(Module):
    """A dict of modules whose parameters are registered under their keys ('heads.query.weight')."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def update(self, modules):
        """Add (key, module) pairs from a mapping or an iterable of pairs."""
        pairs = modules.items() if hasattr(modules, "items") else modules
        for key, module in pairs:
            self[key] = module

    def pop(self, key):
        module = self._modules[key]
        del self._modules[key]
        return module

    def clear(self):
        self._modules.clear()


def _as_parameter(value):
    """A Parameter as it is; another Tensor becomes a Parameter sharing its data (as torch)."""
    if isinstance(value, Parameter):
        return value
    if isinstance(value, Tensor):
        return Parameter(value)
    raise TypeError(f"parameter containers hold Parameters or Tensors; got {type(value).__name__}")


def _describe(parameter):
    size = "x".join(map(str, parameter.shape)) or "()"
    return f"Parameter containing: [{parameter.dtype} of size {size}]"


class ParameterList(Module):
    """A list of parameters, registered under '0', '1', ... (Tensors are made Parameters)."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def append(self, value):
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._parameters.values())[index])
        return self._parameters[str(_position(index, len(self), "ParameterList"))]

    def __setitem__(self, index, value):
        self.register_parameter(
            str(_position(index, len(self), "ParameterList")), _as_parameter(value)
        )

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __iadd__(self, values):
        return self.extend(values)

    def extra_repr(self):
        return "\n".join(f"({name}): {_describe(p)}" for name, p in self._parameters.items())

    def __repr__(self):
        body = self.extra_repr()
        return (
            f"{type(self).__name__}("
            + ("\n  " + body.replace("\n", "\n  ") + "\n" if body else "")
            + ")"
        )


class ParameterDict(Module):
    """A dict of parameters, registered under their keys (Tensors are made Parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key):
        del self._parameters[key]

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key):
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        pairs = parameters.items() if hasattr(parameters, "items") else parameters
        for key, value in pairs:
            self[key] = value

    def extra_repr(self):
        return "\n".join(f"({name}): {_describe(p)}" for name, p in self._parameters.items())

    __repr__ = ParameterList.__repr__


__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
