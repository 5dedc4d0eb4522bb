"""Day counting shared by the date functions. Dates are (year, month, day) tuples."""

MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap(year):
    """Gregorian leap years: divisible by 4, except centuries not divisible by 400."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    if month == 2 and is_leap(year):
        return 29
    return MONTH_DAYS[month - 1]


def days_before_year(year):
    """The days from 0001-01-01 to the first day of ``year``."""
    previous = year - 1
    return previous * 365 + previous // 4 - previous // 100 + previous // 400


def to_ordinal(date):
    """The day number of ``date``: 1 for 0001-01-01."""
    year, month, day = date
    days = days_before_year(year)
    for earlier in range(1, month):
        days += days_in_month(year, earlier)
    return days + day


def from_ordinal(number):
    """The date whose day number is ``number``."""
    year = max(1, (number - 1) * 400 // 146097 - 1)  # a year at or before the right one
    for _ in range(4):
        if days_before_year(year + 1) < number:
            year += 1
    remaining = number - days_before_year(year)
    for month in range(1, 13):
        length = days_in_month(year, month)
        if remaining <= length:
            return (year, month, remaining)
        remaining -= length
    raise ValueError(f"day number {number} is out of range")
