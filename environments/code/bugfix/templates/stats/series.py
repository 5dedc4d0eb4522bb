"""Operations on ordered series."""

from ._validate import require_values, require_window


def moving_average(values, window):
    """The mean of each run of ``window`` consecutive values."""
    items = require_values(values)
    require_window(window, len(items))
    averages = []
    for start in range(len(items) - window + 1):
        averages.append(sum(items[start : start + window]) / window)
    return averages


def cumulative_sum(values):
    """The running totals."""
    totals, running = [], 0
    for value in values:
        running += value
        totals.append(running)
    return totals


def differences(values, lag=1):
    """Each value minus the value ``lag`` places before it."""
    items = list(values)
    if lag < 1:
        raise ValueError("lag must be at least 1")
    return [items[index] - items[index - lag] for index in range(lag, len(items))]


def running_max(values):
    """The largest value seen so far, at each position."""
    result = []
    for value in values:
        if not result or value > result[-1]:
            result.append(value)
        else:
            result.append(result[-1])
    return result


def percent_change(values):
    """The change from each value to the next, in percent of the earlier one."""
    items = require_values(values, 2)
    changes = []
    for previous, current in zip(items, items[1:]):
        if previous == 0:
            raise ValueError("cannot compute a change from zero")
        changes.append((current - previous) / previous * 100)
    return changes
