"""Measures of spread."""

import math

from ._validate import require_fraction, require_values
from .central import mean


def variance(values, sample=True):
    """The variance; ``sample=True`` divides by n - 1 (Bessel's correction), else by n."""
    items = require_values(values, 2 if sample else 1)
    center = mean(items)
    squares = sum((value - center) ** 2 for value in items)
    return squares / (len(items) - 1 if sample else len(items))


def stdev(values, sample=True):
    """The standard deviation."""
    return math.sqrt(variance(values, sample))


def value_range(values):
    """The largest value minus the smallest."""
    items = require_values(values)
    return max(items) - min(items)


def quantile(values, fraction):
    """The quantile at ``fraction`` (0 to 1), interpolating linearly between ranks."""
    items = sorted(require_values(values))
    position = require_fraction(fraction) * (len(items) - 1)
    lower = int(position)
    upper = min(lower + 1, len(items) - 1)
    weight = position - lower
    return items[lower] + (items[upper] - items[lower]) * weight


def interquartile_range(values):
    """The distance from the first to the third quartile."""
    return quantile(values, 0.75) - quantile(values, 0.25)


def mean_absolute_deviation(values):
    """The mean distance of the values from their mean."""
    items = require_values(values)
    center = mean(items)
    return sum(abs(value - center) for value in items) / len(items)
