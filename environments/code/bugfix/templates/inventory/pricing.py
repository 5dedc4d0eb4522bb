"""Order pricing."""

from ._rounding import percent_of

#: (minimum quantity, discount percent), the largest tier first.
BULK_TIERS = ((100, 15), (50, 10), (10, 5))


def bulk_discount(quantity):
    """The discount percent for ordering ``quantity`` units."""
    for minimum, percent in BULK_TIERS:
        if quantity >= minimum:
            return percent
    return 0


def unit_price(base_price, quantity):
    """The price of one unit when ``quantity`` units are ordered."""
    return base_price - percent_of(base_price, bulk_discount(quantity))


def line_total(base_price, quantity):
    if quantity < 0:
        raise ValueError("quantity must not be negative")
    return unit_price(base_price, quantity) * quantity


def order_total(lines, tax_rate=0, coupon=0):
    """The lines' (base price, quantity) totals, less a coupon (never below zero), plus tax."""
    subtotal = sum(line_total(price, quantity) for price, quantity in lines)
    subtotal = max(subtotal - coupon, 0)
    return subtotal + percent_of(subtotal, tax_rate)


def shipping_cost(weight_grams, express=False):
    """499 up to 1 kg, plus 150 per started kilogram beyond; express doubles it."""
    if weight_grams <= 0:
        raise ValueError("weight must be positive")
    extra_kilos = (weight_grams - 1) // 1000
    cost = 499 + 150 * extra_kilos
    return cost * 2 if express else cost
