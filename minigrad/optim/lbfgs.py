"""L-BFGS (torch.optim.LBFGS): a quasi-Newton method that builds its steps from the last
`history_size` changes of the parameters and of the gradient, with an optional strong-Wolfe
line search.

    optimizer = mg.optim.LBFGS(model.parameters(), lr=1, line_search_fn="strong_wolfe")
    def closure():
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        return loss
    optimizer.step(closure)     # up to max_iter iterations, each calling closure once or more

Every parameter is one piece of a single flat vector x (group order, each flattened): the
direction d, the gradient g and the history pairs (s = the step taken, y = the change of g) are
flat arrays of that length. Each iteration, as torch's:

    d = -H g           two-loop recursion over the pairs with H0 = (s.y / y.y) of the newest pair
                       (a pair is kept only if s.y > 1e-10, so H stays positive definite)
    t = lr             (the very first iteration: min(1, 1 / sum|g|) * lr)
    x = x + t d        either at once (then one closure call for the new loss and gradient), or
                       at the t the strong-Wolfe search finds (closure called at each trial t)

and it stops early when max|g| <= tolerance_grad, when the directional derivative g.d is
> -tolerance_change, when max|t d| or the change of the loss is below tolerance_change, or
after max_eval closure calls in this step().
"""

import numbers

import numpy as np

from .. import autograd
from .checks import non_negative
from .optimizer import Optimizer, changed_in_place

# The strong-Wolfe conditions: sufficient decrease (c1) and curvature (c2), torch's values.
SUFFICIENT_DECREASE, CURVATURE = 1e-4, 0.9


def _count(name, value):
    """A whole number >= 1 (max_iter, max_eval, history_size)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 1; got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {value}")
    return int(value)


def _line_search(name, value):
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if value not in (None, "strong_wolfe"):
        raise ValueError(f"{name} must be None or 'strong_wolfe'; got {value!r}")
    return value


class LBFGS(Optimizer):
    """torch.optim.LBFGS: step(closure) runs up to max_iter L-BFGS iterations (see the module's
    docstring) and returns the loss of closure's first call.

    Args:
        params: the parameters, in one group (as torch, LBFGS takes no per-group settings).
        lr: the step length (1 by default: the quasi-Newton step itself).
        max_iter: iterations per step() (20).
        max_eval: closure calls per step() (max_iter * 5 // 4 by default).
        tolerance_grad: stop when max|gradient| is at most this (1e-7).
        tolerance_change: stop when the step or the loss changes less than this (1e-9).
        history_size: how many (s, y) pairs the inverse-Hessian estimate uses (100).
        line_search_fn: None (a step of length lr) or "strong_wolfe".

    The closure must clear the gradients, compute the loss, call backward() and return the loss;
    it is called with gradient recording on. The state (n_iter, func_evals, the direction, the
    history) lives on the first parameter, as in torch, and state_dict() saves it.
    """

    hyper_parameters = {
        "lr": non_negative,
        "max_iter": _count,
        "max_eval": _count,
        "tolerance_grad": non_negative,
        "tolerance_change": non_negative,
        "history_size": _count,
        "line_search_fn": _line_search,
    }

    def __init__(
        self,
        params,
        lr=1.0,
        max_iter=20,
        max_eval=None,
        tolerance_grad=1e-7,
        tolerance_change=1e-9,
        history_size=100,
        line_search_fn=None,
    ):
        max_iter = _count("max_iter", max_iter)
        super().__init__(
            params,
            lr=lr,
            max_iter=max_iter,
            max_eval=max_iter * 5 // 4 if max_eval is None else max_eval,
            tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change,
            history_size=history_size,
            line_search_fn=line_search_fn,
        )
        if len(self.param_groups) != 1:
            raise ValueError(
                "LBFGS doesn't support per-parameter options (parameter groups); "
                f"got {len(self.param_groups)} groups"
            )
        dtypes = {p.dtype for p in self.params}
        if len(dtypes) != 1 or next(iter(dtypes)).kind != "f":
            raise TypeError(
                "LBFGS: the parameters must share one float dtype (they form one vector); "
                f"got {sorted(map(str, dtypes))}"
            )
        self._dtype = self.params[0].dtype
        self._size = sum(p.numel() for p in self.params)
        # the state's entries and their checks (for load_state_dict): the flat vectors have the
        # length of all parameters together
        vector, history = self._vector_check, self._history_check
        self.state_checks = {
            "func_evals": _whole,
            "n_iter": _whole,
            "d": vector,
            "t": _real,
            "old_dirs": history,
            "old_stps": history,
            "ro": _reals,
            "H_diag": _real,
            "prev_flat_grad": vector,
            "prev_loss": _real,
        }
        self.optional_state = tuple(self.state_checks)[2:]  # absent before a first iteration

    def add_param_group(self, param_group):
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    # -- the parameters as one flat vector ------------------------------------------------------
    def _flat_grad(self):
        """Every gradient flattened into one vector (zeros for a parameter without one)."""
        pieces = [
            np.zeros(p.numel(), self._dtype) if p.grad is None else p.grad.numpy().reshape(-1)
            for p in self.params
        ]
        return np.concatenate(pieces).astype(self._dtype, copy=False)

    def _flat_params(self):
        return np.concatenate([p.numpy().reshape(-1) for p in self.params])

    def _move(self, step, direction):
        """x += step * direction, on each parameter's array in place."""
        offset = 0
        for p in self.params:
            array = p.numpy()
            array += self._dtype.type(step) * direction[offset : offset + p.numel()].reshape(
                p.shape
            )
            offset += p.numel()
            changed_in_place(p)

    def _set(self, flat):
        offset = 0
        for p in self.params:
            p.numpy()[...] = flat[offset : offset + p.numel()].reshape(p.shape)
            offset += p.numel()
            changed_in_place(p)

    def _evaluate(self, closure):
        with autograd.enable_grad():
            loss = closure()
        return float(loss), self._flat_grad()

    def _evaluate_at(self, closure, start, step, direction):
        """(loss, flat gradient) at start + step * direction; the parameters go back to start."""
        self._move(step, direction)
        loss, grad = self._evaluate(closure)
        self._set(start)
        return loss, grad

    # -- the step -------------------------------------------------------------------------------
    def step(self, closure):
        """Run the L-BFGS iterations; returns the loss closure gave at the start."""
        if not callable(closure):
            raise TypeError(
                f"LBFGS.step needs a closure (a function that computes the loss, calls backward() "
                f"and returns the loss); got {type(closure).__name__}"
            )
        group = next(iter(self._each_parameter()))[2]  # checks the settings
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        state = self.state.setdefault(0, {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with autograd.enable_grad():
            first_loss = closure()
        loss, grad = float(first_loss), self._flat_grad()
        evaluations = 1
        state["func_evals"] += 1
        if np.abs(grad).max() <= tolerance_grad:
            return first_loss

        direction, step = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_grad, prev_loss = state.get("H_diag"), state.get("prev_flat_grad"), None
        iteration = 0
        while iteration < max_iter:
            iteration += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                direction, old_dirs, old_stps, ro, h_diag = -grad, [], [], [], 1.0
            else:
                h_diag = self._remember(
                    grad - prev_grad, direction * step, old_dirs, old_stps, ro, h_diag, group
                )
                direction = _two_loop(grad, old_dirs, old_stps, ro, h_diag)
            prev_grad, prev_loss = grad.copy(), loss
            step = min(1.0, 1.0 / np.abs(grad).sum()) * lr if state["n_iter"] == 1 else lr
            slope = float(grad @ direction)
            if slope > -tolerance_change:  # not a descent direction: nothing to gain
                break

            trials, last = 0, iteration == max_iter
            if group["line_search_fn"] == "strong_wolfe":
                start = self._flat_params()
                loss, grad, step, trials = _strong_wolfe(
                    lambda at: self._evaluate_at(closure, start, at, direction),
                    step,
                    direction,
                    loss,
                    grad,
                    slope,
                    tolerance_change,
                    max_trials=max_eval - evaluations,  # the search spends this step's budget
                )
                self._move(step, direction)
            else:
                self._move(step, direction)
                if not last:  # the last iteration's loss is the next step()'s first
                    loss, grad = self._evaluate(closure)
                    trials = 1
            evaluations += trials
            state["func_evals"] += trials
            if last or evaluations >= max_eval or np.abs(grad).max() <= tolerance_grad:
                break
            if np.abs(direction * step).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(
            d=direction,
            t=float(step),
            old_dirs=old_dirs,
            old_stps=old_stps,
            ro=ro,
            H_diag=float(h_diag),
            prev_flat_grad=prev_grad,
            prev_loss=prev_loss,
        )
        return first_loss

    @staticmethod
    def _remember(change_of_grad, change_of_x, old_dirs, old_stps, ro, h_diag, group):
        """Keep the newest (s, y) pair if its curvature s.y is positive enough; the new H0."""
        curvature = float(change_of_grad @ change_of_x)
        if curvature <= 1e-10:
            return h_diag
        if len(old_dirs) == group["history_size"]:
            del old_dirs[0], old_stps[0], ro[0]
        old_dirs.append(change_of_grad)
        old_stps.append(change_of_x)
        ro.append(1.0 / curvature)
        return curvature / float(change_of_grad @ change_of_grad)

    # -- state checks (the flat vectors' length is the parameters' total size) -------------------
    def _vector_check(self, name, value, param):
        array = np.asarray(value)
        if array.dtype.kind != "f" or array.shape != (self._size,):
            raise ValueError(
                f"{name} must be a float vector of length {self._size} (all parameters' elements); "
                f"got {array.dtype} of shape {array.shape}"
            )
        return np.array(array, dtype=self._dtype)

    def _history_check(self, name, value, param):
        array = np.asarray(value)
        if array.size == 0:
            return []
        if array.dtype.kind != "f" or array.ndim != 2 or array.shape[1] != self._size:
            raise ValueError(
                f"{name} must be a float array of shape (pairs, {self._size}); "
                f"got {array.dtype} of shape {array.shape}"
            )
        return [np.array(row, dtype=self._dtype) for row in array]


def _whole(name, value, param=None):
    array = np.asarray(value)
    if array.ndim or array.dtype.kind not in "iu" or int(array) < 0:
        raise ValueError(f"{name} must be an integer >= 0; got {value!r}")
    return int(array)


def _real(name, value, param=None):
    array = np.asarray(value)
    if array.ndim or array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a number; got {value!r}")
    return float(array)


def _reals(name, value, param=None):
    array = np.asarray(value, dtype=object if np.ndim(value) == 0 else None)
    if array.ndim != 1 or array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a list of numbers; got {value!r}")
    return [float(number) for number in array]


def _two_loop(grad, old_dirs, old_stps, ro, h_diag):
    """-H grad by the two-loop recursion over the kept (s, y) pairs (Nocedal & Wright, alg. 7.4)."""
    q = -grad
    alphas = [0.0] * len(old_dirs)
    for i in reversed(range(len(old_dirs))):
        alphas[i] = float(old_stps[i] @ q) * ro[i]
        q = q - alphas[i] * old_dirs[i]
    r = q * h_diag
    for i in range(len(old_dirs)):
        beta = float(old_dirs[i] @ r) * ro[i]
        r = r + (alphas[i] - beta) * old_stps[i]
    return r


def _cubic_minimum(t1, f1, slope1, t2, f2, slope2, bounds=None):
    """Where the cubic through (t1, f1) and (t2, f2) with those slopes has its minimum, clipped to
    bounds (default: between t1 and t2); their midpoint if the cubic has none."""
    low, high = bounds if bounds is not None else (min(t1, t2), max(t1, t2))
    d1 = slope1 + slope2 - 3 * (f1 - f2) / (t1 - t2)
    d2_squared = d1 * d1 - slope1 * slope2
    if d2_squared < 0:
        return (low + high) / 2.0
    d2 = np.sqrt(d2_squared)
    if t1 <= t2:
        minimum = t2 - (t2 - t1) * ((slope2 + d2 - d1) / (slope2 - slope1 + 2 * d2))
    else:
        minimum = t1 - (t1 - t2) * ((slope1 + d2 - d1) / (slope1 - slope2 + 2 * d2))
    return min(max(minimum, low), high)


def _strong_wolfe(evaluate, step, direction, loss, grad, slope, tolerance_change, max_trials):
    """A step length meeting the strong Wolfe conditions along `direction` (Nocedal & Wright,
    algorithms 3.5 and 3.6: bracket, then zoom by cubic interpolation), as torch's search.

    evaluate(t) -> (loss, flat gradient) at x + t d; at most 1 + max_trials evaluations.
    Returns (loss, gradient, t, evaluations).
    """
    reach = np.abs(direction).max()

    def sufficient(at, value):
        return value <= loss + SUFFICIENT_DECREASE * at * slope

    new_loss, new_grad = evaluate(step)
    evaluations, trials = 1, 0
    new_slope = float(new_grad @ direction)
    prev_step, prev_loss, prev_grad, prev_slope = 0.0, loss, grad.copy(), slope
    found = False
    bracket = None
    while trials < max_trials:
        if not sufficient(step, new_loss) or (trials > 1 and new_loss >= prev_loss):
            bracket = [
                [prev_step, prev_loss, prev_grad, prev_slope],
                [step, new_loss, new_grad.copy(), new_slope],
            ]
            break
        if abs(new_slope) <= -CURVATURE * slope:
            bracket, found = [[step, new_loss, new_grad, new_slope]], True
            break
        if new_slope >= 0:
            bracket = [
                [prev_step, prev_loss, prev_grad, prev_slope],
                [step, new_loss, new_grad.copy(), new_slope],
            ]
            break
        # still going down at `step`: extrapolate, 1.01 to 10 times as far
        next_step = _cubic_minimum(
            prev_step,
            prev_loss,
            prev_slope,
            step,
            new_loss,
            new_slope,
            bounds=(step + 0.01 * (step - prev_step), step * 10),
        )
        prev_step, prev_loss, prev_grad, prev_slope = step, new_loss, new_grad.copy(), new_slope
        step = next_step
        new_loss, new_grad = evaluate(step)
        evaluations += 1
        new_slope = float(new_grad @ direction)
        trials += 1
    if trials == max_trials:
        bracket = [[0.0, loss, grad, None], [step, new_loss, new_grad, None]]

    # zoom: shrink the bracket [low, high] (low: the lower loss) until a step meets the conditions
    low, high = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    too_close = False
    while not found and trials < max_trials:
        (t_a, f_a, _, s_a), (t_b, f_b, _, s_b) = bracket
        if abs(t_b - t_a) * reach < tolerance_change:
            break
        step = _cubic_minimum(t_a, f_a, s_a, t_b, f_b, s_b)
        # keep the trial at least a tenth of the bracket away from its ends
        margin = 0.1 * (max(t_a, t_b) - min(t_a, t_b))
        if min(max(t_a, t_b) - step, step - min(t_a, t_b)) < margin:
            if too_close or step >= max(t_a, t_b) or step <= min(t_a, t_b):
                nearer_top = abs(step - max(t_a, t_b)) < abs(step - min(t_a, t_b))
                step = max(t_a, t_b) - margin if nearer_top else min(t_a, t_b) + margin
                too_close = False
            else:
                too_close = True
        else:
            too_close = False
        new_loss, new_grad = evaluate(step)
        evaluations += 1
        new_slope = float(new_grad @ direction)
        trials += 1
        if not sufficient(step, new_loss) or new_loss >= bracket[low][1]:
            bracket[high] = [step, new_loss, new_grad.copy(), new_slope]
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(new_slope) <= -CURVATURE * slope:
                found = True
            elif new_slope * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = [step, new_loss, new_grad.copy(), new_slope]
    step, new_loss, new_grad, _ = bracket[low]
    return new_loss, new_grad, step, evaluations
