"""state_dict and load_state_dict of nn.Module (torch's names, order and errors), as a class that
Module inherits: the part of a module a checkpoint sees."""

import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import numpy as np

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class ModuleState:
    """What nn.Module saves and loads: its parameters and persistent buffers by dotted name."""

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """OrderedDict dotted name -> tensor: this module's parameters, then its persistent buffers,
        then each child's, as in torch (a parameter shared by two modules appears under both
        names). The tensors share the arrays but are detached (keep_vars=True: the objects)."""
        destination = OrderedDict() if destination is None else destination
        for name, value in self._own_state():
            destination[prefix + name] = value if keep_vars else value.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        return destination

    def _own_state(self):
        """(name, tensor) of this module's own entries of a state dict: parameters, then
        persistent buffers."""
        skipped = self._non_persistent_buffers
        buffers = ((name, b) for name, b in self._buffers.items() if name not in skipped)
        return [
            (name, value)
            for name, value in itertools.chain(self._parameters.items(), buffers)
            if value is not None
        ]

    def load_state_dict(self, state_dict, strict=True):
        """Copy arrays (or tensors) into the parameters and persistent buffers of the same name, in
        place and cast to each one's dtype (as torch's copy_).

        Shape mismatches always raise, and nothing is changed; with strict=True missing and
        unexpected keys raise too. Returns (missing_keys, unexpected_keys).
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                "load_state_dict expects a dict-like state dict (name -> array or Tensor); "
                f"got {type(state_dict).__name__}"
            )
        own = self.state_dict(keep_vars=True)
        missing = [name for name in own if name not in state_dict]
        unexpected = self._unexpected_keys(state_dict)
        problems = []
        if strict and missing:
            problems.append(f"missing keys: {missing}")
        if strict and unexpected:
            problems.append(f"unexpected keys: {unexpected}")
        values = {}
        for name, target in own.items():
            if name in state_dict:
                value = np.asarray(state_dict[name])
                if value.shape != target.shape:
                    problems.append(f"{name}: expected shape {target.shape}, got {value.shape}")
                elif value.dtype.kind not in "biuf":
                    problems.append(f"{name}: expected a numeric array, got dtype {value.dtype}")
                values[name] = value
        if problems:
            raise RuntimeError(
                f"load_state_dict into {type(self).__name__} failed: " + "; ".join(problems)
            )
        for name, value in values.items():
            # in place: optimizers keep their arrays; the version bump guards graphs made before
            np.copyto(own[name]._data, value, casting="unsafe")
            own[name]._bump_version()
        return IncompatibleKeys(missing, unexpected)

    def _unexpected_keys(self, state_dict):
        """The keys of state_dict that name nothing here, in torch's order: module by module (this
        one first, then its descendants depth first), each module's in the order of state_dict. A
        key belongs to the module its dotted path leads to; one that leads into a child slot holding
        None names nothing and is not reported, as in torch."""
        unexpected = [key for key in state_dict if not isinstance(key, str)]
        for path, module in self.named_modules(remove_duplicate=False):
            prefix = f"{path}." if path else ""
            own = {name for name, _ in module._own_state()}
            for key in state_dict:
                if isinstance(key, str) and key.startswith(prefix):
                    first, dot, _ = key[len(prefix) :].partition(".")
                    if (first not in module._modules) if dot else (first not in own):
                        unexpected.append(key)
        return unexpected
