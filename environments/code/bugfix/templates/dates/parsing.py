"""Reading and writing dates."""

from ._days import days_in_month
from .months import month_name, month_number


def validate(date):
    """``date`` if it is a real (year, month, day); ValueError otherwise."""
    year, month, day = date
    if not 1 <= year <= 9999:
        raise ValueError(f"year {year} is out of range")
    if not 1 <= month <= 12:
        raise ValueError(f"month {month} is out of range")
    if not 1 <= day <= days_in_month(year, month):
        raise ValueError(f"day {day} is out of range for {year}-{month:02d}")
    return date


def parse_iso(text):
    """'2024-03-05' -> (2024, 3, 5)."""
    parts = text.strip().split("-")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"not an ISO date: {text!r}")
    return validate(tuple(int(part) for part in parts))


def format_iso(date):
    year, month, day = validate(date)
    return f"{year:04d}-{month:02d}-{day:02d}"


def parse_us(text):
    """'03/05/2024' (month/day/year) -> (2024, 3, 5)."""
    parts = text.strip().split("/")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"not a US date: {text!r}")
    month, day, year = (int(part) for part in parts)
    return validate((year, month, day))


def format_long(date):
    """(2024, 3, 5) -> 'March 5, 2024'."""
    year, month, day = validate(date)
    return f"{month_name(month)} {day}, {year}"


def parse_long(text):
    """'March 5, 2024' or 'mar 5 2024' -> (2024, 3, 5)."""
    words = text.replace(",", " ").split()
    if len(words) != 3:
        raise ValueError(f"not a date: {text!r}")
    return validate((int(words[2]), month_number(words[0]), int(words[1])))
