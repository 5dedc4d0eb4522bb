"""Integer arithmetic on cents."""


def round_half_up(numerator, denominator):
    """numerator / denominator rounded to the nearest integer, halves away from zero."""
    if denominator <= 0:
        raise ValueError("denominator must be positive")
    quotient, remainder = divmod(abs(numerator), denominator)
    if remainder * 2 >= denominator:
        quotient += 1
    return quotient if numerator >= 0 else -quotient


def percent_of(cents, percent):
    """``percent`` percent of ``cents``, rounded half up to a whole cent."""
    return round_half_up(cents * percent, 100)
