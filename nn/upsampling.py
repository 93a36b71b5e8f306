"""torch.nn.modules.upsampling, pixelshuffle and channelshuffle: resampling layers, as torch's
Upsample, UpsamplingNearest2d, UpsamplingBilinear2d, PixelShuffle, PixelUnshuffle and
ChannelShuffle: the functions of minigrad/ops/resample.py with their settings
fixed."""

from . import functional as F
from .module import Module

# fmt: off
__all__ = [
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "PixelShuffle", "PixelUnshuffle", "ChannelShuffle",
]
# fmt: on


class Upsample(Module):
    """torch.nn.Upsample: F.interpolate with size or scale_factor, mode and align_corners fixed."""

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode="nearest",
        align_corners=None,
        recompute_scale_factor=None,
    ):
        super().__init__()
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners, self.recompute_scale_factor = (
            mode,
            align_corners,
            recompute_scale_factor,
        )

    def forward(self, x):
        return F.interpolate(
            x,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self):
        shown = (
            f"scale_factor={self.scale_factor!r}"
            if self.scale_factor is not None
            else f"size={self.size!r}"
        )
        return f"{shown}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """torch.nn.UpsamplingNearest2d: Upsample with mode 'nearest' over (N, C, H, W)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """torch.nn.UpsamplingBilinear2d: Upsample with mode 'bilinear' and align_corners=True."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    """torch.nn.PixelShuffle: (*, C * r^2, H, W) -> (*, C, H * r, W * r)."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x):
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """torch.nn.PixelUnshuffle: (*, C, H * r, W * r) -> (*, C * r^2, H, W)."""

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x):
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """torch.nn.ChannelShuffle: (N, C, *) with the channels of `groups` groups interleaved."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        return F.channel_shuffle(x, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"
