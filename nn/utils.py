"""Training helpers. clip_grad_norm_ lives in minigrad.optim (next to the optimizers that
follow it); this is the same function under torch's name nn.utils.clip_grad_norm_."""

from minigrad.optim import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_"]
