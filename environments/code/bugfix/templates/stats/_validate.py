"""Argument checks shared by the statistics functions."""


def require_values(values, minimum=1):
    """The values as a list; ValueError if there are fewer than ``minimum`` of them."""
    items = list(values)
    if len(items) < minimum:
        raise ValueError(f"need at least {minimum} values, got {len(items)}")
    return items


def require_fraction(fraction):
    """``fraction`` as a float; ValueError unless 0 <= fraction <= 1."""
    if fraction < 0 or fraction > 1:
        raise ValueError(f"expected a fraction between 0 and 1, got {fraction}")
    return float(fraction)


def require_window(window, length):
    """``window`` if it is between 1 and ``length``; ValueError otherwise."""
    if window < 1 or window > length:
        raise ValueError(f"window must be between 1 and {length}, got {window}")
    return window
