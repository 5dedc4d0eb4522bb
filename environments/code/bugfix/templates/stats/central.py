"""Measures of central tendency."""

from ._validate import require_values


def mean(values):
    """The arithmetic mean."""
    items = require_values(values)
    return sum(items) / len(items)


def median(values):
    """The middle value; the mean of the two middle values for an even count."""
    items = sorted(require_values(values))
    middle = len(items) // 2
    if len(items) % 2 == 1:
        return items[middle]
    return (items[middle - 1] + items[middle]) / 2


def mode(values):
    """The most common value; the smallest of them on a tie."""
    counts = {}
    for value in require_values(values):
        counts[value] = counts.get(value, 0) + 1
    best = max(counts.values())
    return min(value for value, count in counts.items() if count == best)


def weighted_mean(values, weights):
    """The mean of ``values`` weighted by ``weights``."""
    items = require_values(values)
    if len(weights) != len(items):
        raise ValueError("values and weights differ in length")
    total = sum(weights)
    if total <= 0:
        raise ValueError("weights must sum to a positive number")
    return sum(value * weight for value, weight in zip(items, weights)) / total


def midrange(values):
    """Halfway between the smallest and the largest value."""
    items = require_values(values)
    return (min(items) + max(items)) / 2
