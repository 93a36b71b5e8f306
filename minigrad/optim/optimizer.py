"""What every optimizer holds: the parameters, a state per parameter and the hyper-parameters,
with the checks that keep them valid when an optimizer is built and when a state dict is
loaded (one list of checks for both). Subclasses name their hyper-parameters and state and
define _update() (step() runs an optional closure first, then it). The checks themselves are in
checks.py; clip_grad_norm_ and clip_grad_value_ in clip_grad.py.
"""

import numbers
from collections.abc import Mapping

import numpy as np

from .. import autograd
from ..engine import Tensor


def _plain(value):
    """A value as mg.load returns it (0-d or 1-d array) -> a Python number or list."""
    if isinstance(value, Tensor):
        value = value._data
    return value.tolist() if isinstance(value, np.ndarray) else value


def changed_in_place(param):
    """Tell the tensor its array was written in place (the lead's version counter, if present)."""
    bump = getattr(param, "_bump_version", None)
    if bump is not None:
        bump()


class Optimizer:
    """Holds the parameters in groups, per-parameter state and hyper-parameters; subclasses
    define _update(), the update itself (step(closure) calls it).

    As in torch, `params` is an iterable of tensors (one group) or of dicts, each with a
    "params" entry and any hyper-parameters that differ from the constructor's (the usual
    case: no weight decay on biases and LayerNorm weights). `param_groups` is the list of those
    dicts, each holding every hyper-parameter; `defaults` the constructor's values. Changing
    `param_groups[i]["lr"]` changes that group's rate; `opt.lr = 1e-4` sets it in every group,
    and `opt.lr` reads it when all groups agree. `hyper_parameters` maps each hyper-parameter
    to its check; those in `optional_hyper_parameters` came later, and a state dict without
    them loads (they keep their current value). `state[i]` is a dict for the i-th parameter
    (counting through the groups in order), created on its first step, whose entries are named in
    `state_checks` (name -> check(name, value, parameter)). state_dict() and load_state_dict() save
    and restore both, in torch's layout, as plain numbers and arrays that mg.save can store.
    """

    hyper_parameters = {}
    # added in a later version: a state dict without them keeps the current value
    optional_hyper_parameters = ()
    state_checks = {}
    optional_state = ()  # entries only some settings keep (Adam's max_exp_avg_sq, with amsgrad)

    def __init__(self, params, **defaults):
        name = type(self).__name__
        self.param_groups = []
        self.defaults = {
            key: check(key, defaults[key]) for key, check in self.hyper_parameters.items()
        }
        self.params = []  # every parameter, group after group: state[i] belongs to params[i]
        self.state = _State(self)
        for group in _as_groups(name, params):
            self.add_param_group(group)
        if not self.params:
            raise ValueError(f"{name} got an empty parameter list")

    def add_param_group(self, param_group):
        """Add a group (a dict with "params" and optional hyper-parameters) to optimize too, as
        torch's add_param_group: a layer unfrozen while fine-tuning, say."""
        name = type(self).__name__
        where = f"parameter group {len(self.param_groups)}"
        if not isinstance(param_group, dict) or "params" not in param_group:
            raise TypeError(
                f"{name}: a {where} must be a dict with a 'params' entry; got {param_group!r:.80}"
            )
        params, names = _named(
            name, _listed(name, param_group["params"], f"the parameters of {where}"), where
        )
        group = {"params": params} if names is None else {"params": params, "param_names": names}
        for key, check in self.hyper_parameters.items():
            group[key] = (
                check(f"{where}: {key}", param_group[key])
                if key in param_group
                else self.defaults[key]
            )
        # names, notes: kept
        group.update((key, value) for key, value in param_group.items() if key not in group)
        everyone = self.params + params
        for offset, p in enumerate(params):
            index = len(self.params) + offset
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"{name} optimizes Tensors; parameter {index} is a {type(p).__name__}"
                )
            # a frozen parameter (requires_grad=False) is fine: it has no grad to step by
            if not p.is_leaf:
                raise ValueError(
                    f"{name}: parameter {index} (shape {p.shape}) must be a leaf tensor "
                    "(a Parameter, or a tensor made directly), not the result of an op"
                )
            if not p._data.flags.writeable:
                raise ValueError(
                    f"{name}: parameter {index} (shape {p.shape}) holds a read-only array; "
                    f"an optimizer updates parameters in place"
                )
            for earlier in range(index):
                _check_not_shared(name, everyone, earlier, index)
        self.params.extend(params)
        self.param_groups.append(group)

    def _each_parameter(self):
        """(index, parameter, its group) for every parameter, in the order of self.params, after
        checking every group's settings (a value put into param_groups by hand is checked here,
        before any parameter changes)."""
        for g, group in enumerate(self.param_groups):
            for key, check in self.hyper_parameters.items():
                group[key] = check(f"param_groups[{g}][{key!r}]", group[key])
        index = 0
        for group in self.param_groups:
            for p in group["params"]:
                yield index, p, group
                index += 1

    def _parameters_with_grads(self):
        """_each_parameter's (index, parameter, group) for the parameters that have a gradient, each
        checked to have the parameter's shape before that parameter changes."""
        for index, p, group in self._each_parameter():
            if p.grad is None:
                continue
            if p.grad.shape != p.shape:
                raise ValueError(
                    f"{type(self).__name__}: parameter {index} has shape {p.shape} but its "
                    f"grad has shape {p.grad.shape}"
                )
            yield index, p, group

    # -- hyper-parameters as attributes: opt.lr ----------------------------------------------------
    def __getattr__(self, key):  # only for names not found the usual way
        if key in type(self).hyper_parameters and self.__dict__.get("param_groups"):
            values = [group[key] for group in self.param_groups]
            if all(value == values[0] for value in values):
                return values[0]
            raise AttributeError(
                f"{type(self).__name__}.{key}: the parameter groups have different values "
                f"{values}; read param_groups[i][{key!r}]"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key, value):
        if key in type(self).hyper_parameters:  # opt.lr = 1e-4: every group's
            value = self.hyper_parameters[key](key, value)
            for group in self.param_groups:
                group[key] = value
        else:
            object.__setattr__(self, key, value)

    def zero_grad(self, set_to_none=True):
        """Forget the gradients: set .grad to None (torch's default), or with set_to_none=False
        fill the gradient arrays with zeros in place."""
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad._data[...] = 0

    def step(self, closure=None):
        """Update every parameter that has a gradient. closure (optional, as in torch): a function
        that clears the gradients, computes the loss, calls backward() and returns the loss; it is
        called first, with gradient recording on, and step returns its loss (else None)."""
        loss = None
        if closure is not None:
            if not callable(closure):
                raise TypeError(
                    f"{type(self).__name__}.step: closure must be a function; "
                    f"got {type(closure).__name__}"
                )
            with autograd.enable_grad():
                loss = closure()
        self._update()
        return loss

    def _update(self):
        raise NotImplementedError

    # -- state --------------------------------------------------------------------------------
    def _hyper_keys(self):
        """{state dict key: (group index, hyper-parameter)}: the plain names ("lr") with one
        group, "param_groups.<g>.<name>" with several."""
        if len(self.param_groups) == 1:
            return {key: (0, key) for key in self.hyper_parameters}
        return {
            f"param_groups.{g}.{key}": (g, key)
            for g in range(len(self.param_groups))
            for key in self.hyper_parameters
        }

    def state_dict(self):
        """torch's layout, of values mg.save can store: {"state": {parameter index: {name: copy
        of its array or number}}, "param_groups": [{every hyper-parameter, "params": [the
        indices of the group's parameters]}]} (a group's other entries, such as a name, are not
        saved)."""
        groups, start = [], 0
        for group in self.param_groups:
            count = len(group["params"])
            groups.append(
                {
                    **{key: group[key] for key in self.hyper_parameters},
                    "params": list(range(start, start + count)),
                }
            )
            start += count
        state = {
            index: {
                key: value if isinstance(value, numbers.Number) else np.array(value)
                for key, value in self.state[index].items()
            }
            for index in sorted(self.state)
        }
        return {"state": state, "param_groups": groups}

    def _flat(self, state_dict):
        """The entries of a state dict by the names load_state_dict checks and reports: 'lr' (or
        'param_groups.<g>.lr' with several groups), 'param_groups.<g>.params' (the count),
        'state.<index>.<name>'. A state dict in that flat form (minigrad's before torch's
        layout) is returned as it is."""
        if not (
            isinstance(state_dict.get("param_groups"), (list, tuple))
            and isinstance(state_dict.get("state"), Mapping)
        ):
            return state_dict
        groups, flat = state_dict["param_groups"], {}
        for key in state_dict:
            if key not in ("state", "param_groups"):
                flat[key] = state_dict[key]  # reported as unexpected
        for g, group in enumerate(groups):
            if not isinstance(group, Mapping):
                raise ValueError(
                    f"{type(self).__name__}.load_state_dict failed: param_groups[{g}] must be a "
                    f"dict; got {type(group).__name__}"
                )
            for key, value in group.items():
                if key == "params":
                    value = len(value) if isinstance(value, (list, tuple, np.ndarray)) else value
                    flat[f"param_groups.{g}.params"] = value
                else:
                    flat[key if len(groups) == 1 else f"param_groups.{g}.{key}"] = value
        for index, entries in state_dict["state"].items():
            entries = entries.items() if isinstance(entries, Mapping) else [("?", entries)]
            for key, value in entries:
                flat[f"state.{index}.{key}"] = value
        return flat

    def load_state_dict(self, state_dict):
        """Restore hyper-parameters and per-parameter state from state_dict() (or mg.load of it),
        into an optimizer built with the same parameter groups.

        Every entry gets the check the constructor or step() would give it (lr >= 0, betas in
        [0, 1), steps integers >= 1, second moments >= 0, buffers of the parameter's shape), and
        the optimizer must hold as many parameters, grouped alike. Nothing changes unless all
        entries pass; otherwise one ValueError lists each wrong entry by its key.
        """
        state_dict = self._flat(state_dict)
        problems, hyper, state = [], {}, {}
        hyper_keys = self._hyper_keys()
        for key, (g, name) in hyper_keys.items():
            if key not in state_dict:
                if name not in self.optional_hyper_parameters:
                    problems.append(f"missing key {key!r}")
                continue
            try:
                hyper[g, name] = self.hyper_parameters[name](key, _plain(state_dict[key]))
            except (TypeError, ValueError) as error:
                problems.append(str(error))
        sizes = {
            f"param_groups.{g}.params": len(group["params"])
            for g, group in enumerate(self.param_groups)
        }
        for key, size in sizes.items():
            if key not in state_dict:
                if len(self.param_groups) > 1:  # one group: a state dict saved before counts
                    problems.append(f"missing key {key!r}")
            elif _plain(state_dict[key]) != size:
                problems.append(
                    f"{key}: this optimizer's group holds {size} parameters; "
                    f"the state dict's holds {_plain(state_dict[key])!r}"
                )
        for key, value in state_dict.items():
            if key in hyper_keys or key in sizes:
                continue
            parts = key.split(".")
            if (
                len(parts) != 3
                or parts[0] != "state"
                or not parts[1].isdigit()
                or parts[2] not in self.state_checks
            ):
                groups = (
                    len(
                        {
                            part.split(".")[1]
                            for part in state_dict
                            if part.startswith("param_groups.")
                        }
                    )
                    or 1
                )
                hint = (
                    f" (the state dict is of an optimizer with {groups} parameter group(s); "
                    f"this one has {len(self.param_groups)})"
                    if groups != len(self.param_groups)
                    else ""
                )
                problems.append(f"unexpected key {key!r}{hint}")
                continue
            index = int(parts[1])
            if index >= len(self.params):
                problems.append(
                    f"{key}: parameter index {index} out of range for {len(self.params)} parameters"
                )
                continue
            try:
                state.setdefault(index, {})[parts[2]] = self.state_checks[parts[2]](
                    key, value, self.params[index]
                )
            except (TypeError, ValueError) as error:
                problems.append(str(error))
        for index, entries in sorted(state.items()):
            missing = [
                name
                for name in self.state_checks
                if name not in entries and name not in self.optional_state
            ]
            if missing:
                problems.append(
                    f"state.{index}: missing {', '.join(missing)} "
                    "(a parameter's state is all or nothing)"
                )
        if problems:
            raise ValueError(
                f"{type(self).__name__}.load_state_dict failed: " + "; ".join(problems)
            )
        for (g, name), value in hyper.items():
            self.param_groups[g][name] = value
        self.state = _State(
            self,
            {
                index: {name: entries[name] for name in self.state_checks if name in entries}
                for index, entries in state.items()
            },
        )

    def __repr__(self):
        if len(self.param_groups) == 1:
            settings = ", ".join(
                f"{key}={self.param_groups[0][key]}" for key in self.hyper_parameters
            )
            return f"{type(self).__name__}({len(self.params)} parameters, {settings})"
        groups = "; ".join(
            f"group {g}: {len(group['params'])} parameters, "
            + ", ".join(f"{key}={group[key]}" for key in self.hyper_parameters)
            for g, group in enumerate(self.param_groups)
        )
        return f"{type(self).__name__}({groups})"


class _State(dict):
    """The optimizer's per-parameter state, {index in optimizer.params: {name: value}}; reading it
    with the parameter itself works too, as torch code does (opt.state[p]["exp_avg"]; a
    parameter without state yet gives {})."""

    def __init__(self, optimizer, entries=()):
        super().__init__(entries)
        self._optimizer = optimizer

    def _index(self, key):
        if isinstance(key, Tensor):
            for index, p in enumerate(self._optimizer.params):
                if p is key:
                    return index
            raise KeyError("this tensor is not one of the optimizer's parameters")
        return key

    def __getitem__(self, key):
        index = self._index(key)
        if isinstance(key, Tensor) and not super().__contains__(index):
            return {}
        return super().__getitem__(index)

    def __contains__(self, key):
        try:
            return super().__contains__(self._index(key))
        except KeyError:
            return False

    def get(self, key, default=None):
        return self[key] if key in self else default


def _listed(name, params, what):
    """params (a Tensor, or an iterable in a fixed order) as a list."""
    if isinstance(params, (set, frozenset)):
        raise TypeError(
            f"{name}: {what} are a set, whose order changes from run to run; give a list"
        )
    return [params] if isinstance(params, Tensor) else list(params)


def _named(name, params, where):
    """(tensors, names) from a list of tensors (names None) or of (name, tensor) pairs, such as
    model.named_parameters() (torch 2.6+ takes those too and keeps the names in "param_names")."""
    pairs = [isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in params]
    if not any(pairs):
        return params, None
    if not all(pairs):
        raise ValueError(
            f"{name}: the parameters of {where} must all be tensors or all (name, tensor) pairs "
            f"(as named_parameters() gives), not a mix"
        )
    return [p for _, p in params], [n for n, _ in params]


def _as_groups(name, params):
    """The constructor's params as a list of group dicts: tensors make one group."""
    if isinstance(params, dict):
        raise TypeError(
            f"{name}: params must be an iterable of Tensors or of dicts (parameter groups); "
            "got a dict. For one group, wrap it in a list: [{'params': ...}]"
        )
    params = _listed(name, params, "the parameters")
    dicts = [isinstance(p, dict) for p in params]
    if any(dicts) and not all(dicts):
        raise TypeError(
            f"{name}: params must be all Tensors or all dicts (parameter groups), not a mix"
        )
    return params if params and all(dicts) else [{"params": params}]


def _check_not_shared(name, params, earlier, later):
    """Two parameters must not overlap in memory: each step would update that memory twice."""
    a, b = params[earlier], params[later]
    if a is b:
        raise ValueError(
            f"{name}: parameter {later} (shape {b.shape}) appears more than once in the "
            f"parameter list (first as parameter {earlier})"
        )
    # may_share_memory is a cheap bounds test; shares_memory then decides exactly
    if np.may_share_memory(a._data, b._data) and np.shares_memory(a._data, b._data):
        raise ValueError(
            f"{name}: parameters {earlier} (shape {a.shape}) and {later} (shape {b.shape}) share "
            f"memory (one views the other's array, or both view one array), so every step "
            f"would update it twice; give each parameter its own array"
        )
