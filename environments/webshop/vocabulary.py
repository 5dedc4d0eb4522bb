"""The word lists the generated WebShop catalog is made of, loaded from ``vocabulary.json``.

Every product of :class:`~agentgym.environments.webshop.catalog.GeneratedCatalog` belongs to
one :class:`ProductType` of :data:`PRODUCT_TYPES` (about 20 per category). The table is
data, ``vocabulary.json`` next to this module:

* ``category_weights``: each category's share of the catalog, spread evenly over its types;
* ``brands``: brand names are a head and a tail ("Lu" + "ora"), sometimes with a category suffix;
* ``title_words``: words kept as written (not title-cased) when attributes appear in titles;
* ``option_pools``: the values an option may take (an :class:`OptionPool`);
* ``product_types``: one :class:`ProductType` each: ``category``, ``query``, ``path``,
  ``nouns``, ``goal_nouns`` as ``[determiner, noun]`` pairs (goals put attribute
  adjectives between the two: "a pair of" + "running shoes"), ``leads`` (optional, default
  none), ``words``, ``extras``, ``attributes``, ``options`` as ``[option name, pool,
  probability that a product offers it]``, ``price`` as ``[low, high]`` dollars, ``uses``.

Conventions the engine and the goals rely on: option names and values are lower case, and
values hold no ``/`` and no surrounding spaces, so the original WebShop's cleaning
(``value.strip().replace('/', ' | ').lower()``) leaves them unchanged; attributes are lower
case phrases such as ``sulfate free``. The loader checks the table's shape and raises
``ValueError`` naming the entry that is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The table (package data).
VOCABULARY_FILE = Path(__file__).with_name("vocabulary.json")


@dataclass(frozen=True)
class OptionPool:
    """The values one option may take and how a product picks its subset.

    ``window``: a run of consecutive values (sizes 6-10, small to x-large); ``subset``:
    any values, kept in pool order (colors, flavors). A product offers between ``low`` and
    ``high`` values.
    """

    values: tuple[str, ...]
    kind: str  # "window" or "subset"
    low: int
    high: int


@dataclass(frozen=True)
class OptionSpec:
    """An option a product type may offer: its name, pool, and how often products offer it."""

    name: str
    pool: OptionPool
    probability: float


@dataclass(frozen=True)
class ProductType:
    """One kind of product (e.g. shampoo, men's running shoes, office chairs)."""

    category: str  # one of data.CATEGORIES
    query: str  # the search query that finds it, as the original's ``query`` field
    path: str  # "Beauty & Personal Care › Hair Care › Shampoos"
    nouns: tuple[str, ...]  # title head nouns, title case
    goal_nouns: tuple[tuple[str, str], ...]  # (determiner, noun) for instructions
    leads: tuple[str, ...]  # what follows the brand in titles ("Women's", "") ...
    words: tuple[str, ...]  # title descriptors
    extras: tuple[str, ...]  # title endings ("with Pockets", "for Dry Hair")
    attributes: tuple[str, ...]
    options: tuple[OptionSpec, ...]
    price: tuple[float, float]  # typical low and high price in dollars
    uses: tuple[str, ...]  # "everyday washing", "home office" ...
    weight: float  # the category's weight spread evenly over its types


def _strings(values: list[Any], where: str) -> tuple[str, ...]:
    if not isinstance(values, list) or not all(isinstance(value, str) for value in values):
        raise ValueError(f"{VOCABULARY_FILE.name}: {where} must be a list of strings, got {values!r}")
    return tuple(values)


def _pool(name: str, entry: dict[str, Any]) -> OptionPool:
    values = _strings(entry["values"], f"option pool {name}")
    pool = OptionPool(values, entry["kind"], int(entry["low"]), int(entry["high"]))
    if pool.kind not in ("window", "subset") or not 1 <= pool.low <= pool.high <= len(values):
        raise ValueError(f"{VOCABULARY_FILE.name}: option pool {name} needs a kind and 1 <= low <= high <= values")
    return pool


def _product_type(entry: dict[str, Any], pools: dict[str, OptionPool], weight: float) -> ProductType:
    query = entry["query"]
    options = []
    for name, pool, probability in entry["options"]:
        if pool not in pools:
            raise ValueError(f"{VOCABULARY_FILE.name}: product type {query!r} names an unknown pool {pool!r}")
        options.append(OptionSpec(name, pools[pool], float(probability)))
    low, high = entry["price"]
    return ProductType(
        category=entry["category"],
        query=query,
        path=entry["path"],
        nouns=_strings(entry["nouns"], f"{query}: nouns"),
        goal_nouns=tuple((determiner, noun) for determiner, noun in entry["goal_nouns"]),
        leads=_strings(entry.get("leads", [""]), f"{query}: leads"),
        words=_strings(entry["words"], f"{query}: words"),
        extras=_strings(entry["extras"], f"{query}: extras"),
        attributes=_strings(entry["attributes"], f"{query}: attributes"),
        options=tuple(options),
        price=(float(low), float(high)),
        uses=_strings(entry["uses"], f"{query}: uses"),
        weight=weight,
    )


_TABLE: dict[str, Any] = json.loads(VOCABULARY_FILE.read_text(encoding="utf-8"))
CATEGORY_WEIGHTS: dict[str, float] = {name: float(weight) for name, weight in _TABLE["category_weights"].items()}
POOLS: dict[str, OptionPool] = {name: _pool(name, entry) for name, entry in _TABLE["option_pools"].items()}
BRAND_HEADS = _strings(_TABLE["brands"]["heads"], "brands.heads")
BRAND_TAILS = _strings(_TABLE["brands"]["tails"], "brands.tails")
BRAND_SUFFIXES: dict[str, tuple[str, ...]] = {
    category: _strings(suffixes, f"brands.suffixes.{category}")
    for category, suffixes in _TABLE["brands"]["suffixes"].items()
}
#: Words kept upper case (or as written here) when attributes are title-cased in titles.
TITLE_WORDS: dict[str, str] = {word.lower(): word for word in _strings(_TABLE["title_words"], "title_words")}
_TYPE_COUNTS = {
    category: sum(entry["category"] == category for entry in _TABLE["product_types"]) for category in CATEGORY_WEIGHTS
}
PRODUCT_TYPES: tuple[ProductType, ...] = tuple(
    _product_type(entry, POOLS, CATEGORY_WEIGHTS[entry["category"]] / _TYPE_COUNTS[entry["category"]])
    for entry in _TABLE["product_types"]
)
del _TABLE, _TYPE_COUNTS
_BY_QUERY: dict[str, ProductType] = {t.query: t for t in PRODUCT_TYPES}
if len(_BY_QUERY) != len(PRODUCT_TYPES):
    raise ValueError(f"{VOCABULARY_FILE.name}: product type queries must be unique")


def product_type(query: str) -> ProductType | None:
    """The generated product type whose search query is ``query`` (None for other catalogs' queries)."""
    return _BY_QUERY.get(query)
