"""Facts about months and years."""

from ._days import days_in_month, is_leap

NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def month_name(month, short=False):
    """'March' for 3 ('Mar' when ``short``)."""
    if not 1 <= month <= 12:
        raise ValueError(f"there is no month {month}")
    name = NAMES[month - 1]
    return name[:3] if short else name


def month_number(name):
    """1-12 for a full or three-letter month name, in any case."""
    wanted = name.strip().lower()
    for index, full in enumerate(NAMES):
        if wanted in (full.lower(), full[:3].lower()):
            return index + 1
    raise ValueError(f"unknown month {name!r}")


def days_in_year(year):
    return 366 if is_leap(year) else 365


def quarter(month):
    """1 for January to March, ..., 4 for October to December."""
    return (month - 1) // 3 + 1


def month_lengths(year):
    return [days_in_month(year, month) for month in range(1, 13)]
