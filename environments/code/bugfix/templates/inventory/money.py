"""Money amounts as integer cents."""

from ._rounding import percent_of


def parse_amount(text):
    """'12.5' -> 1250, '$1,299.99' -> 129999, '-3.07' -> -307."""
    cleaned = text.strip().replace("$", "").replace(",", "")
    negative = cleaned.startswith("-")
    if negative:
        cleaned = cleaned[1:]
    whole, _, fraction = cleaned.partition(".")
    if not whole.isdigit() or len(fraction) > 2 or (fraction and not fraction.isdigit()):
        raise ValueError(f"not an amount: {text!r}")
    cents = int(whole) * 100 + int(fraction.ljust(2, "0"))
    return -cents if negative else cents


def format_amount(cents):
    """1234567 -> '$12,345.67'; a negative amount gets a leading minus."""
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(cents), 100)
    return f"{sign}${whole:,}.{rest:02d}"


def apply_discount(cents, percent):
    """The price after taking ``percent`` percent off."""
    if not 0 <= percent <= 100:
        raise ValueError("a discount must be between 0 and 100 percent")
    return cents - percent_of(cents, percent)


def add_tax(cents, rate):
    """The price plus ``rate`` percent tax."""
    return cents + percent_of(cents, rate)


def split_evenly(cents, parts):
    """``cents`` split into ``parts`` amounts that differ by at most a cent, the larger first."""
    if parts < 1:
        raise ValueError("parts must be positive")
    base, extra = divmod(cents, parts)
    return [base + 1 if index < extra else base for index in range(parts)]
