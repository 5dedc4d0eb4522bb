"""An inventory: items by SKU."""

from .items import Item


class Inventory:
    def __init__(self):
        self._items = {}

    def add(self, item):
        """Add ``item``; a known SKU gets its quantity increased and takes the new price."""
        if item.quantity < 0:
            raise ValueError("quantity must not be negative")
        existing = self._items.get(item.sku)
        if existing is None:
            self._items[item.sku] = Item(item.sku, item.name, item.price, item.quantity)
        else:
            existing.quantity += item.quantity
            existing.price = item.price

    def remove(self, sku, quantity):
        """Take ``quantity`` units of ``sku`` out: KeyError if unknown, ValueError if too few."""
        if sku not in self._items:
            raise KeyError(sku)
        item = self._items[sku]
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} of {sku} in stock")
        item.quantity -= quantity

    def quantity(self, sku):
        item = self._items.get(sku)
        return item.quantity if item else 0

    def skus(self):
        return sorted(self._items)

    def items(self):
        return [self._items[sku] for sku in self.skus()]

    def low_stock(self, threshold):
        """The SKUs with fewer than ``threshold`` units, sorted."""
        return [item.sku for item in self.items() if item.quantity < threshold]

    def total_units(self):
        return sum(item.quantity for item in self._items.values())
