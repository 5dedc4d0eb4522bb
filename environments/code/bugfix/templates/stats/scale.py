"""Rescaling values."""

from ._validate import require_values
from .central import mean
from .spread import stdev


def normalize(values):
    """Min-max scaling to [0, 1]; all zeros when every value is the same."""
    items = require_values(values)
    low, high = min(items), max(items)
    if high == low:
        return [0.0 for _ in items]
    return [(value - low) / (high - low) for value in items]


def rescale(values, new_min, new_max):
    """Min-max scaling to [new_min, new_max]."""
    if new_max < new_min:
        raise ValueError("new_max must not be below new_min")
    return [new_min + unit * (new_max - new_min) for unit in normalize(values)]


def zscores(values):
    """How many sample standard deviations each value lies from the mean."""
    items = require_values(values, 2)
    center, spread = mean(items), stdev(items)
    if spread == 0:
        return [0.0 for _ in items]
    return [(value - center) / spread for value in items]


def clip(values, low, high):
    """Each value limited to [low, high]."""
    if low > high:
        raise ValueError("low must not exceed high")
    return [min(max(value, low), high) for value in values]
