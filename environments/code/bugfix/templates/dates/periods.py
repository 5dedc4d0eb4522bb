"""Calendar periods: months, quarters, weeks and ranges of dates."""

from ._days import days_in_month
from .arithmetic import add_days, days_between
from .weekdays import weekday


def month_range(year, month):
    """(first day, last day) of a month."""
    return (year, month, 1), (year, month, days_in_month(year, month))


def quarter_range(year, number):
    """(first day, last day) of quarter ``number`` (1-4)."""
    if not 1 <= number <= 4:
        raise ValueError("a quarter is numbered 1 to 4")
    first_month = 3 * (number - 1) + 1
    last_month = first_month + 2
    return (year, first_month, 1), (year, last_month, days_in_month(year, last_month))


def week_start(date, first_weekday=0):
    """The first day of the week holding ``date`` (weeks start on ``first_weekday``)."""
    offset = (weekday(date) - first_weekday) % 7
    return add_days(date, -offset)


def dates_between(start, end, step=1):
    """Every ``step``-th date from ``start`` up to and including ``end``."""
    if step < 1:
        raise ValueError("step must be positive")
    return [add_days(start, offset) for offset in range(0, days_between(start, end) + 1, step)]


def overlap_days(first, second):
    """How many days two inclusive (start, end) ranges share."""
    start = max(first[0], second[0])
    end = min(first[1], second[1])
    if end < start:
        return 0
    return days_between(start, end) + 1
