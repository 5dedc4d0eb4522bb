"""Weekdays and business days (Monday = 0, ..., Sunday = 6)."""

from ._days import to_ordinal
from .arithmetic import add_days

DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def weekday(date):
    """0 for Monday ... 6 for Sunday (0001-01-01 was a Monday)."""
    return (to_ordinal(date) - 1) % 7


def day_name(date):
    return DAY_NAMES[weekday(date)]


def is_weekend(date):
    return weekday(date) >= 5


def next_weekday(date, target):
    """The first date after ``date`` that falls on weekday ``target``."""
    ahead = (target - weekday(date)) % 7
    if ahead == 0:
        ahead = 7
    return add_days(date, ahead)


def add_business_days(date, count):
    """The date ``count`` business days (Monday to Friday) after ``date``."""
    if count < 0:
        raise ValueError("count must not be negative")
    current = date
    for _ in range(count):
        current = add_days(current, 1)
        if weekday(current) == 5:
            current = add_days(current, 2)
        elif weekday(current) == 6:
            current = add_days(current, 1)
    return current


def business_days_between(start, end):
    """The business days after ``start``, up to and including ``end``."""
    total = 0
    for offset in range(1, to_ordinal(end) - to_ordinal(start) + 1):
        if not is_weekend(add_days(start, offset)):
            total += 1
    return total
