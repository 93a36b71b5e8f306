"""Helpers under torch.utils' names: `minigrad.utils.data` (Dataset, DataLoader, random_split)."""

from . import data

__all__ = ["data"]
