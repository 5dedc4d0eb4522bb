"""Reports on an inventory."""

from .money import format_amount


def stock_value(inventory):
    """The value of everything in stock, in cents."""
    return sum(item.price * item.quantity for item in inventory.items())


def most_valuable(inventory, n):
    """The SKUs of the ``n`` items with the highest stock value; ties by SKU."""
    ranked = sorted(inventory.items(), key=lambda item: (-item.price * item.quantity, item.sku))
    return [item.sku for item in ranked[:n]]


def restock_list(inventory, threshold, target):
    """(SKU, units to order) for each item below ``threshold``, to bring it up to ``target``."""
    return [(sku, target - inventory.quantity(sku)) for sku in inventory.low_stock(threshold)]


def summary_lines(inventory):
    """One line per item: SKU, quantity and value, aligned."""
    lines = []
    for item in inventory.items():
        lines.append(f"{item.sku}  {item.quantity:>5}  {format_amount(item.price * item.quantity):>12}")
    return lines
