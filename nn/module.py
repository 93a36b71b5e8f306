"""Module and Parameter: how layers hold their weights and find each other.

Assigning a Parameter or a Module to an attribute registers it (as in PyTorch), so
`named_parameters()` and `state_dict()` find every weight by its dotted name.
"""

from collections import OrderedDict

import numpy as np

import minigrad as mg
from minigrad import autograd
from minigrad.tensor import Parameter


class Module:
    """Base class of layers and models: subclasses set attributes in __init__ and define forward()."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.__init__ must call super().__init__() "
                                 f"before assigning attribute {name!r}")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        self.__dict__.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):  # only called when normal lookup fails
        for registry in ("_parameters", "_modules"):
            entries = self.__dict__.get(registry, {})
            if name in entries:
                return entries[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def _check_name(self, kind, name):
        """torch's rules for names given to register_parameter / add_module."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name must be a string; got {type(name).__name__}")
        if not name or "." in name:
            raise KeyError(f"{kind} name must be a non-empty string without '.'; got {name!r}")
        if hasattr(type(self), name) or (name in self.__dict__ and name not in self._parameters
                                         and name not in self._modules):
            raise KeyError(f"attribute {name!r} already exists on {type(self).__name__}; choose another {kind} name")

    def register_parameter(self, name, parameter):
        """Register a Parameter (or None, for an absent optional weight such as a bias)."""
        self._check_name("parameter", name)
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be an nn.Parameter or None; "
                            f"got {type(parameter).__name__}")
        if parameter is None:
            object.__setattr__(self, name, None)
        else:
            setattr(self, name, parameter)

    def add_module(self, name, module):
        self._check_name("module", name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be an nn.Module; got {type(module).__name__}")
        setattr(self, name, module)

    # -- traversal ----------------------------------------------------------------------------
    def named_modules(self, prefix=""):
        """(dotted name, module) for this module and every descendant, depth first; shared modules once."""
        seen, stack = set(), [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{child_name}" if name else child_name, child)
                        for child_name, child in module._modules.items()]
            stack.extend(reversed(children))

    def modules(self):
        return (module for _, module in self.named_modules())

    def named_children(self):
        return iter(self._modules.items())

    def children(self):
        return iter(self._modules.values())

    def named_parameters(self, prefix=""):
        """(dotted name, Parameter) for every parameter, each once, in registration order."""
        seen = set()
        for module_name, module in self.named_modules(prefix):
            for name, parameter in module._parameters.items():
                if id(parameter) not in seen:
                    seen.add(id(parameter))
                    yield (f"{module_name}.{name}" if module_name else name), parameter

    def parameters(self):
        return (parameter for _, parameter in self.named_parameters())

    # -- modes and gradients ------------------------------------------------------------------
    def train(self, mode=True):
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self):
        for parameter in self.parameters():
            parameter.grad = None

    # -- state --------------------------------------------------------------------------------
    def state_dict(self):
        """OrderedDict dotted name -> Tensor sharing the parameter's data (not part of any graph)."""
        return OrderedDict((name, parameter.detach()) for name, parameter in self.named_parameters())

    def load_state_dict(self, state_dict, strict=True):
        """Copy arrays (or tensors) into the parameters of the same name.

        Shape mismatches always raise; with strict=True missing and unexpected keys raise too.
        Returns (missing_keys, unexpected_keys).
        """
        own = dict(self.named_parameters())
        missing = [name for name in own if name not in state_dict]
        unexpected = [name for name in state_dict if name not in own]
        problems = []
        if strict and missing:
            problems.append(f"missing keys: {missing}")
        if strict and unexpected:
            problems.append(f"unexpected keys: {unexpected}")
        values = {}
        for name, parameter in own.items():
            if name in state_dict:
                value = np.asarray(state_dict[name])
                if value.shape != parameter.shape:
                    problems.append(f"{name}: expected shape {parameter.shape}, got {value.shape}")
                elif not np.issubdtype(value.dtype, np.floating):
                    problems.append(f"{name}: expected a float array, got dtype {value.dtype}")
                values[name] = value
        if problems:
            raise RuntimeError(f"load_state_dict into {type(self).__name__} failed: " + "; ".join(problems))
        for name, value in values.items():
            own[name].data[...] = value  # in place (cast to the parameter's dtype): optimizers keep their arrays
            own[name]._bump_version()
        return missing, unexpected

    # -- calling ------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        with autograd.module_scope(self):  # mg.viz groups the ops made inside by module
            return self.forward(*args, **kwargs)

    # -- printing -----------------------------------------------------------------------------
    def extra_repr(self):
        """One line of settings shown in repr(), e.g. 'in_features=3, out_features=2'."""
        return ""

    def __repr__(self):
        lines = [f"({name}): " + repr(child).replace("\n", "\n  ") for name, child in self._modules.items()]
        if not lines:
            return f"{type(self).__name__}({self.extra_repr()})"
        head = f"{type(self).__name__}(" + (self.extra_repr() + "\n" if self.extra_repr() else "\n")
        return head + "".join(f"  {line}\n" for line in lines) + ")"


class ModuleList(Module):
    """A list of modules whose parameters are registered (names '0', '1', ...)."""

    def __init__(self, modules=()):
        super().__init__()
        for module in modules:
            self.append(module)

    def append(self, module):
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__} holds Modules; got {type(module).__name__}")
        self.add_module(str(len(self._modules)), module)
        return self

    def __getitem__(self, index):
        return list(self._modules.values())[index]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class Sequential(ModuleList):
    """Modules applied one after another: Sequential(Linear(2, 8), Tanh(), Linear(8, 1))."""

    def __init__(self, *modules):
        super().__init__(modules)

    def forward(self, x):
        for module in self:
            x = module(x)
        return x
