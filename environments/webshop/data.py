"""What WebShop is made of: products, goals, and the catalog interface both sources implement.

Field names follow the original WebShop where its reward reads them (``query``,
``product_category``, ``Attributes`` ...), in Python style here; ``original.py`` maps them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

#: The five top-level categories of WebShop.
CATEGORIES = ("beauty", "food", "fashion", "furniture", "electronics")


@dataclass(frozen=True)
class Review:
    """One customer review."""

    score: int  # 1-5 stars
    title: str
    body: str


@dataclass(frozen=True)
class Product:
    """One product of the catalog."""

    asin: str
    title: str
    category: str  # one of CATEGORIES
    product_category: str  # "Beauty & Personal Care › Hair Care › Shampoos"
    query: str  # the product-type query it belongs to (the original's ``query``)
    pricing: tuple[float, ...]  # (price,) or (low, high)
    options: dict[str, tuple[str, ...]]  # option name -> values, e.g. {"size": ("s", "m"), "color": ...}
    attributes: tuple[str, ...]  # e.g. ("sulfate free", "long lasting")
    bullet_points: tuple[str, ...]
    description: str
    reviews: tuple[Review, ...] = ()
    rating: float | None = None

    @property
    def price(self) -> float:
        """The price charged: the single price, or the low end of a range (as the original)."""
        return self.pricing[0]


@dataclass(frozen=True)
class Goal:
    """A shopping instruction and what the reward compares the purchase with."""

    asin: str  # the target product
    instruction_text: str
    attributes: tuple[str, ...]
    goal_options: dict[str, str] = field(default_factory=dict)  # option name -> wanted value
    price_upper: float = 1_000_000.0
    # Copied from the target product (the original's goal dict holds them too):
    category: str = ""
    query: str = ""
    name: str = ""  # the target's title
    product_category: str = ""


class Catalog(Protocol):
    """A product source: generated (``catalog.GeneratedCatalog``) or the original files (``original.py``).

    Products are addressed by index ``0 .. len - 1``; goals by goal index, split as the
    original (goals shuffled with seed 233; test = the first 500, dev = the next 1,000,
    train = the rest).
    """

    name: str  # identifies the catalog (and its cached search index), e.g. "generated-20000-seed0"

    def __len__(self) -> int: ...

    def product(self, index: int) -> Product: ...

    def index_of(self, asin: str) -> int: ...

    def search_text(self, index: int) -> str:
        """The text the search engine indexes for product ``index``."""
        ...

    def goals(self) -> list[Goal]: ...

    def drawn_price(self, index: int) -> float:
        """What the original charges for product ``index``: its price, or a seeded draw in its range."""
        ...


class ProductCache:
    """A small thread-safe LRU of recently used products, shared by the catalog classes."""

    def __init__(self, size: int) -> None:
        self._products: OrderedDict[int, Product] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def peek(self, index: int) -> Product | None:
        """The cached product, without marking it as recently used."""
        with self._lock:
            return self._products.get(index)

    def get(self, index: int, make: Callable[[int], Product]) -> Product:
        """Product ``index`` from the cache, or ``make(index)`` (then cached)."""
        with self._lock:
            product = self._products.get(index)
            if product is not None:
                self._products.move_to_end(index)
                return product
        product = make(index)
        with self._lock:
            self._products[index] = product
            if len(self._products) > self._size:
                self._products.popitem(last=False)
        return product
