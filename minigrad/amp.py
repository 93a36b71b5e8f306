"""torch.amp on a CPU-only float32/float64 engine: autocast and GradScaler as scripts use them.

    with mg.autocast(device_type="cpu", dtype=mg.float32):   # computes as without it
        loss = model(x)
    scaler = mg.amp.GradScaler(enabled=False)                 # scale() is the identity
    scaler.scale(loss).backward(); scaler.step(optimizer); scaler.update()

minigrad has no float16 or bfloat16, so autocast never lowers precision: on the CPU it accepts
float32 and float64 (torch's CPU autocast disables itself for those too, so both compute the
same numbers) and refuses the half dtypes and the default (torch's CPU default is bfloat16).
For a device minigrad lacks, autocast and GradScaler disable themselves with a warning, as torch
does when that device is missing. `mg.bfloat16`, `mg.float16` and `mg.half` exist so that a
script's table of dtypes builds; using one as a tensor's dtype raises an error naming it.
"""

import functools
import warnings

import numpy as np

from . import dtypes
from .device import DEVICE_TYPES
from .errors import ArgumentError, DTypeError
from .engine.grad_mode import no_grad


class MissingDType:
    """A torch dtype minigrad does not have: a name to look up, never a tensor's dtype."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        held = ", ".join(map(str, dtypes.ALLOWED_DTYPES))
        return f"mg.{self.name} (minigrad has no {self.name}: tensors hold {held})"


bfloat16 = MissingDType("bfloat16")
float16 = half = MissingDType("float16")


def _device_type(device_type, where):
    name = str(device_type).split(":")[0]
    if not isinstance(device_type, str) or name not in DEVICE_TYPES:
        raise ArgumentError(
            f"{where}: expected a device type among {', '.join(DEVICE_TYPES)}; got {device_type!r}"
        )
    return name


class autocast:
    """torch.autocast / torch.amp.autocast: a context manager (and decorator) that changes
    nothing minigrad computes.

    Args:
        device_type: 'cpu' (another device type disables it with a warning).
        dtype: mg.float32 or mg.float64 on the CPU; None (torch's bfloat16), mg.bfloat16 and
            mg.float16 raise DTypeError naming the dtype.
        enabled: False makes it a no-op whatever the dtype.
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device_type = _device_type(device_type, "mg.autocast")
        self.fast_dtype = dtype
        if enabled and self.device_type != "cpu":
            warnings.warn(
                f"mg.autocast: device_type={device_type!r}, but minigrad runs on the CPU only; "
                "autocast is disabled",
                stacklevel=2,
            )
            enabled = False
        if enabled:
            if dtype is None or isinstance(dtype, MissingDType):
                asked = "bfloat16 (torch's CPU default)" if dtype is None else dtype.name
                raise DTypeError(
                    "mg.autocast: minigrad computes in float32 or float64 only; "
                    f"got dtype {asked}. Pass dtype=mg.float32, or enabled=False"
                )
            if dtypes.as_dtype(dtype) not in dtypes.FLOAT_DTYPES:
                raise DTypeError(
                    f"mg.autocast: expected dtype mg.float32 or mg.float64; got {dtype}"
                )
        self.enabled = bool(enabled)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def under_autocast(*args, **kwargs):
            with self:
                return function(*args, **kwargs)

        return under_autocast


class GradScaler:
    """torch.amp.GradScaler: scales the loss so that small gradients survive half precision,
    unscales the gradients before the step, skips steps whose gradients are not finite.

    Disabled (enabled=False, or a device other than the CPU, with a warning as torch gives when
    that device is missing) it is the identity: scale(loss) is loss, step(optimizer) is
    optimizer.step(), get_scale() is 1.0. Enabled on the CPU it scales as torch does (a power
    of two, so float32 results are the same as unscaled ones unless the gradient overflows).
    """

    def __init__(
        self,
        device="cuda",
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
    ):
        device = _device_type(device, "mg.amp.GradScaler")
        if enabled and device != "cpu":
            warnings.warn(
                f"mg.amp.GradScaler: device {device!r} is not available "
                "(minigrad runs on the CPU only); the scaler is disabled",
                stacklevel=2,
            )
            enabled = False
        if not (growth_factor > 1.0 and 0.0 < backoff_factor < 1.0 and init_scale > 0):
            raise ArgumentError(
                "mg.amp.GradScaler: expected init_scale > 0, growth_factor > 1 and "
                f"0 < backoff_factor < 1; got {init_scale}, {growth_factor}, {backoff_factor}"
            )
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval, self._growth_tracker = int(growth_interval), 0
        self._found_inf = {}  # id(optimizer) -> found a non-finite gradient, since update()

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """outputs (a tensor, or a list/tuple of them) times the scale; themselves if disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(output) for output in outputs)
        return outputs * self._scale

    def unscale_(self, optimizer):
        """Divide the gradients of optimizer's parameters by the scale, once per step."""
        if not self._enabled:
            return
        if id(optimizer) in self._found_inf:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since update()"
            )
        inverse = np.float32(1.0 / self._scale)
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for parameter in group["params"]:
                    if parameter.grad is not None:
                        parameter.grad.mul_(float(inverse))
                        found_inf = found_inf or not np.isfinite(parameter.grad.numpy()).all()
        self._found_inf[id(optimizer)] = found_inf

    def step(self, optimizer, *args, **kwargs):
        """optimizer.step(...) after unscaling, unless a gradient is inf or nan (then skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) not in self._found_inf:
            self.unscale_(optimizer)
        if self._found_inf[id(optimizer)]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Back off after a skipped step, grow after growth_interval good ones (or set
        new_scale)."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale)
        elif any(self._found_inf.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._found_inf = {}

    def state_dict(self):
        if not self._enabled:
            return {}
        return {
            "scale": self._scale,
            "growth_factor": self._growth_factor,
            "backoff_factor": self._backoff_factor,
            "growth_interval": self._growth_interval,
            "_growth_tracker": self._growth_tracker,
        }

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("mg.amp.GradScaler: the state_dict is empty (a disabled scaler's)")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
