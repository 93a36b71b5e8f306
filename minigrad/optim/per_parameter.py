"""The step that torch's everyday optimizers share: each parameter is updated from its own
gradient and state only. PerParameterOptimizer walks the parameters that have a gradient,
prepares what every rule begins with (the step count, maximize, weight decay), and hands one
parameter at a time to the subclass's _update_parameter(). The updates are numpy, in place, in
the parameter's dtype (no Numba kernel: each is a handful of whole-array operations).
"""

import numpy as np

from .optimizer import Optimizer, changed_in_place


class PerParameterOptimizer(Optimizer):
    """An Optimizer whose subclass defines, for one parameter:

        _new_state(param, group) -> dict    its state before the first step (step 0, zero buffers)
        _update_parameter(param, grad, state, group)   the rule itself, changing param in place

    Before _update_parameter, step() adds 1 to state["step"], negates the gradient when
    group["maximize"], and applies group["weight_decay"]: shrinking the parameter by
    1 - lr * weight_decay when group["decoupled_weight_decay"] (AdamW's decay), else adding
    weight_decay * param to the gradient (L2). `param` is C-contiguous (a parameter that is not
    is updated through a copy written back into its own memory) and `grad` has its dtype.
    """

    def _new_state(self, param, group):
        raise NotImplementedError

    def _update_parameter(self, param, grad, state, group):
        raise NotImplementedError

    def _update(self):
        for index, p, group in self._parameters_with_grads():
            state = self.state.setdefault(index, {})
            if not state:
                state.update(self._new_state(p._data, group))
            state["step"] += 1
            param = p._data
            work = param if param.flags.c_contiguous else np.ascontiguousarray(param)
            grad = np.asarray(p.grad._data, dtype=param.dtype)
            if group["maximize"]:
                grad = -grad
            weight_decay = group["weight_decay"]
            if weight_decay and group.get("decoupled_weight_decay"):
                work *= work.dtype.type(1 - group["lr"] * weight_decay)
            elif weight_decay:
                grad = grad + work.dtype.type(weight_decay) * work
            self._update_parameter(work, grad, state, group)
            if work is not param:
                param[...] = work
            changed_in_place(p)
