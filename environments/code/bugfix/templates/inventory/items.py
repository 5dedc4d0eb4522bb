"""Stock items."""

from dataclasses import dataclass

from .money import parse_amount

SKU_LETTERS = 3
SKU_DIGITS = 4


@dataclass
class Item:
    """A product line: price in cents."""

    sku: str
    name: str
    price: int
    quantity: int = 0

    @property
    def value(self):
        return self.price * self.quantity


def valid_sku(sku):
    """Three capital letters, a dash and four digits, like 'ABC-1234'."""
    if len(sku) != SKU_LETTERS + 1 + SKU_DIGITS:
        return False
    letters, dash, digits = sku[:SKU_LETTERS], sku[SKU_LETTERS], sku[SKU_LETTERS + 1 :]
    return letters.isalpha() and letters.isupper() and dash == "-" and digits.isdigit()


def parse_item(line):
    """'ABC-1234; Blue mug; 4.50; 12' -> Item('ABC-1234', 'Blue mug', 450, 12)."""
    fields = [part.strip() for part in line.split(";")]
    if len(fields) != 4:
        raise ValueError(f"expected 4 fields, got {len(fields)}")
    sku, name, price, quantity = fields
    if not valid_sku(sku):
        raise ValueError(f"bad SKU {sku!r}")
    return Item(sku, name, parse_amount(price), int(quantity))
