"""Finding outliers."""

from .scale import zscores
from .spread import quantile


def iqr_bounds(values, factor=1.5):
    """The (low, high) fences: the quartiles widened by ``factor`` interquartile ranges."""
    first, third = quantile(values, 0.25), quantile(values, 0.75)
    spread = third - first
    return first - factor * spread, third + factor * spread


def iqr_outliers(values, factor=1.5):
    """The values outside the fences, in their original order."""
    low, high = iqr_bounds(values, factor)
    return [value for value in values if value < low or value > high]


def zscore_outliers(values, threshold=2.0):
    """The values whose z-score exceeds ``threshold`` in size, in their original order."""
    return [value for value, score in zip(values, zscores(values)) if abs(score) > threshold]


def trimmed(values, fraction):
    """The values, sorted, without the lowest and the highest ``fraction`` of them."""
    items = sorted(values)
    cut = int(len(items) * fraction)
    if cut * 2 >= len(items):
        raise ValueError("nothing is left after trimming")
    return items[cut : len(items) - cut]
