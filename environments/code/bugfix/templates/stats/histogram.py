"""Counting values into bins."""

from ._validate import require_values


def bin_edges(low, high, bins):
    """The ``bins + 1`` edges of equal-width bins from ``low`` to ``high``."""
    if bins < 1:
        raise ValueError("need at least one bin")
    if high <= low:
        raise ValueError("high must exceed low")
    width = (high - low) / bins
    return [low + index * width for index in range(bins + 1)]


def _bin_index(value, low, high, bins):
    """The bin of ``value`` (the top edge belongs to the last bin); None outside [low, high]."""
    if value < low or value > high:
        return None
    if value == high:
        return bins - 1
    return int((value - low) / (high - low) * bins)


def histogram(values, bins, low, high):
    """How many values fall into each bin; values outside [low, high] are left out."""
    bin_edges(low, high, bins)  # checks the arguments
    counts = [0] * bins
    for value in require_values(values):
        index = _bin_index(value, low, high, bins)
        if index is not None:
            counts[index] += 1
    return counts


def frequencies(values):
    """Each distinct value with its count, the most frequent first; ties by value."""
    counts = {}
    for value in require_values(values):
        counts[value] = counts.get(value, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))
