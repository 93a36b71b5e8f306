"""torch.nn.modules.pooling: pooling layers, as torch's: MaxPool1d/2d, AvgPool1d/2d and the adaptive
AdaptiveAvgPool1d/2d and AdaptiveMaxPool1d/2d. Each is the F function of the same name with its
settings kept (and shown in repr as torch shows them); none has weights."""

from . import functional as F
from .module import Module

# fmt: off
__all__ = [
    "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
]
# fmt: on


class _Pool(Module):
    """A pooling F function called as function(x, **settings): `settings` names the attributes
    passed, `shown` those extra_repr lists."""

    function = None
    settings = shown = ()

    def forward(self, x):
        return type(self).function(x, **{name: getattr(self, name) for name in self.settings})

    def extra_repr(self):
        return ", ".join(f"{name}={getattr(self, name)}" for name in self.shown)


class _MaxPoolNd(_Pool):
    settings = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
    shown = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = bool(return_indices), bool(ceil_mode)


class MaxPool1d(_MaxPoolNd):
    """torch.nn.MaxPool1d: the largest value of each window of (N, C, L) or (C, L); with
    return_indices, also where each came from."""

    function = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """torch.nn.MaxPool2d over (N, C, H, W) or (C, H, W)."""

    function = staticmethod(F.max_pool2d)


class _AvgPoolNd(_Pool):
    settings = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad")
    shown = ("kernel_size", "stride", "padding")

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__()
        self.kernel_size, self.stride = kernel_size, kernel_size if stride is None else stride
        self.padding, self.ceil_mode, self.count_include_pad = (
            padding,
            bool(ceil_mode),
            bool(count_include_pad),
        )


class AvgPool1d(_AvgPoolNd):
    """torch.nn.AvgPool1d: the mean of each window of (N, C, L) or (C, L). Its settings are kept as
    1-tuples, as torch keeps them."""

    function = staticmethod(F.avg_pool1d)

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        def single(value):
            return value if isinstance(value, tuple) else (value,)

        super().__init__(
            single(kernel_size),
            None if stride is None else single(stride),
            single(padding),
            ceil_mode,
            count_include_pad,
        )


class AvgPool2d(_AvgPoolNd):
    """torch.nn.AvgPool2d over (N, C, H, W) or (C, H, W); divisor_override divides every window's
    sum by that number instead."""

    function = staticmethod(F.avg_pool2d)
    settings = _AvgPoolNd.settings + ("divisor_override",)

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override


class _AdaptivePool(_Pool):
    settings = shown = ("output_size",)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size


class AdaptiveAvgPool1d(_AdaptivePool):
    """torch.nn.AdaptiveAvgPool1d: (N, C, L) -> (N, C, output_size), the mean of each of torch's
    bins."""

    function = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    """torch.nn.AdaptiveAvgPool2d: (N, C, H, W) -> (N, C, *output_size); AdaptiveAvgPool2d(1) is
    global average pooling."""

    function = staticmethod(F.adaptive_avg_pool2d)


class _AdaptiveMaxPool(_AdaptivePool):
    settings = ("output_size", "return_indices")

    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = bool(return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """torch.nn.AdaptiveMaxPool1d: the largest value of each of torch's bins."""

    function = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """torch.nn.AdaptiveMaxPool2d: (N, C, H, W) -> (N, C, *output_size)."""

    function = staticmethod(F.adaptive_max_pool2d)
