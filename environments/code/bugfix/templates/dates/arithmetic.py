"""Adding to dates and measuring between them."""

from ._days import days_in_month, from_ordinal, to_ordinal


def add_days(date, days):
    return from_ordinal(to_ordinal(date) + days)


def days_between(start, end):
    """The days from ``start`` to ``end`` (negative if ``end`` comes first)."""
    return to_ordinal(end) - to_ordinal(start)


def add_months(date, months):
    """The same day ``months`` later, clamped to the month's end (Jan 31 + 1 month = Feb 28 or 29)."""
    year, month, day = date
    index = year * 12 + (month - 1) + months
    new_year, new_month = divmod(index, 12)
    new_month += 1
    return (new_year, new_month, min(day, days_in_month(new_year, new_month)))


def age(birth, today):
    """The completed years from ``birth`` to ``today``."""
    years = today[0] - birth[0]
    if (today[1], today[2]) < (birth[1], birth[2]):
        years -= 1
    return years


def is_before(first, second):
    return to_ordinal(first) < to_ordinal(second)
