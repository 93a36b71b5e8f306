"""torch.cuda.amp's old names (nanoGPT's `torch.cuda.amp.GradScaler(enabled=...)`): the CUDA
versions of mg.amp's, which disable themselves with a warning, as torch's do without a CUDA
device, so a script that enables them on a CPU runs on in float32."""

from .. import amp


def autocast(enabled=True, dtype=None, cache_enabled=True):
    """mg.amp.autocast("cuda", ...): disabled (with a warning) when enabled."""
    return amp.autocast("cuda", dtype=dtype, enabled=enabled)


class GradScaler(amp.GradScaler):
    """mg.amp.GradScaler("cuda", ...): disabled (with a warning) when enabled."""

    def __init__(
        self,
        init_scale=2.0**16,
        growth_factor=2.0,
        backoff_factor=0.5,
        growth_interval=2000,
        enabled=True,
    ):
        super().__init__(
            "cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled
        )
