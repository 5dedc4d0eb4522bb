"""A generated WebShop catalog: realistic products computed on demand from (seed, index).

:class:`GeneratedCatalog` holds no per-product data. Product ``i`` is drawn, when asked
for, from a generator seeded with ``(seed, i)``: its type (one of about 20 per category in
:mod:`~agentgym.environments.webshop.vocabulary`, in the proportions of
``vocabulary.CATEGORY_WEIGHTS``), brand, title, 3-6 attributes from the type's pool,
options with realistic value sets (sizes, colors, flavors, scents, capacities ...), a
price or a price range in the type's band, 3-6 bullet points and a description that
mention its attributes, and 0-5 reviews with an average rating. The same seed and index
always give the same product, on any machine and Python version (``random.Random`` with
an integer seed is stable), so a catalog of 1,000,000 products costs no memory beyond a
small cache of recently used products; a smaller catalog with the same seed is a prefix
of a larger one.

ASINs look like Amazon's (``B0`` and 8 base-36 characters) and encode the index: an
affine bijection modulo 36**8 whose constants derive from the seed, so ``index_of`` is
O(1) without a table and different seeds give different ASINs.

:func:`load_catalog` picks a catalog from a source string (see its docstring); the env
reads ``WEBSHOP_DATA`` and passes it on.
"""

from __future__ import annotations

import bisect
import itertools
import math
import os
import random
import threading
import weakref
from typing import TYPE_CHECKING

from agentgym.environments.webshop.data import Goal, Product, ProductCache, Review
from agentgym.environments.webshop.goals import generate_goals
from agentgym.environments.webshop.vocabulary import (
    BRAND_HEADS,
    BRAND_SUFFIXES,
    BRAND_TAILS,
    PRODUCT_TYPES,
    TITLE_WORDS,
    OptionPool,
)

if TYPE_CHECKING:
    from agentgym.environments.webshop.data import Catalog

DEFAULT_NUM_PRODUCTS = 20_000
ASIN_DIGITS = 8
ASIN_MODULUS = 36**ASIN_DIGITS
_BASE36 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_MAX_PRODUCTS = 2**40  # product keys are (seed << 40) | index
_CUMULATIVE_WEIGHTS = list(itertools.accumulate(t.weight for t in PRODUCT_TYPES))
_TOTAL_WEIGHT = _CUMULATIVE_WEIGHTS[-1]


def option_text(options: dict[str, tuple[str, ...]]) -> str:
    """Options as the original's search documents write them: ``size: s, m, and color: red, blue``."""
    return ", and ".join(f"{name}: {', '.join(values)}" for name, values in options.items())


def search_document(product: Product) -> str:
    """What the original WebShop indexes for a product, lower-cased: title, description,
    the first bullet point and the options (``search_engine/convert_product_file_format.py``)."""
    first_bullet = product.bullet_points[0] if product.bullet_points else ""
    return " ".join((product.title, product.description, first_bullet, option_text(product.options))).lower()


def title_case(phrase: str) -> str:
    """``"usb c fast charging"`` -> ``"USB C Fast Charging"`` (acronyms and small words kept)."""
    return " ".join(TITLE_WORDS.get(word, word[:1].upper() + word[1:]) for word in phrase.split(" "))


# ---- text pieces of products -------------------------------------------------------------------

_BULLETS_ATTR = (
    "{A}: A {noun} you can rely on for {use}.",
    "{A}: Key feature: {attr}. Made for {use}.",
    "{A}: {brand} built this {noun} around one idea: {attr}.",
    "{A}: Customers mention {attr} first when they review this {noun}.",
    "{A}: Designed with {use} in mind, and checked by hand before it ships.",
    "{A}: Part of what makes the {brand} {noun} a favorite for {use}.",
)
_BULLETS_PAIR = (
    "WHY YOU WILL LOVE IT: {attr} and {attr2}, in a {noun} made for {use}.",
    "TWO IN ONE: {attr} plus {attr2}, without compromise.",
    "THE DETAILS MATTER: {attr}, {attr2} and careful finishing by {brand}.",
)
_BULLETS_CATEGORY = {
    "beauty": (
        "HOW TO USE: Apply a small amount and work it in gently; use daily for best results.",
        "SAFE FORMULA: Free from harsh additives and tested by an independent lab.",
        "SATISFACTION PROMISE: If you do not love it, contact {brand} for a full refund.",
    ),
    "food": (
        "STORAGE: Keep in a cool, dry place and close the package after opening.",
        "SIMPLE INGREDIENTS: Made in small batches with ingredients you can pronounce.",
        "GREAT FOR SHARING: Stock the pantry, the office kitchen or a gift basket.",
    ),
    "fashion": (
        "CARE: Wash cold with similar colors and lay flat or tumble dry on low heat.",
        "SIZE TIP: Please check the size chart in the images before ordering.",
        "OCCASION: Pairs easily with your favorite pieces for work, travel or weekends.",
    ),
    "furniture": (
        "DIMENSIONS: {dims}; please measure your space before ordering.",
        "SIMPLE SETUP: Numbered parts, all tools and clear instructions are included.",
        "STURDY BUILD: Tested to hold up to {load} lbs for years of daily use.",
    ),
    "electronics": (
        "WHAT YOU GET: 1 x {noun}, user manual, 18-month warranty and friendly customer support.",
        "WIDE COMPATIBILITY: Works with most phones, tablets, laptops and smart TVs.",
        "SAFETY FIRST: Built-in protection against overcharging, overheating and short circuits.",
    ),
}
_DESCRIPTION_OPEN = (
    "The {brand} {noun} is made for {use}. Highlights: {attr} and {attr2}.",
    "Meet the {noun} from {brand}, made for {use}, with {attr} and {attr2} among its key features.",
    "Looking for a {noun} for {use}? Shoppers choose this one for {attr} and {attr2}.",
    "{brand} designed this {noun} for {use}; key features include {attr} and {attr2}.",
)
_DESCRIPTION_MIDDLE = (
    "Also worth noting: {attr}.",
    "Another highlight is {attr}.",
    "Plus: {attr}, so it fits right into your routine.",
    "Customers also like the {attr}.",
)
_DESCRIPTION_CLOSE = (
    "Order today and see why thousands of shoppers choose {brand}.",
    "It also makes a thoughtful gift.",
    "Backed by a 30-day money back guarantee.",
    "Questions? Our support team answers within 24 hours.",
    "",
)
_REVIEW_TITLES = {
    5: ("Love it!", "Exactly what I needed", "Great purchase", "Five stars", "Highly recommend", "Perfect"),
    4: ("Pretty good", "Good value", "Works well", "Happy with it", "Nice, with one small issue"),
    3: ("It's okay", "Average", "Decent for the price", "Mixed feelings"),
    2: ("Not great", "Disappointed", "Expected more"),
    1: ("Would not buy again", "Poor quality", "Returned it", "Did not work for me"),
}
_REVIEW_BODIES = {
    5: (
        "Love this {noun}: {attr}, just as promised. I use it for {use} and it is perfect.",
        "Bought it for {use} and could not be happier. {attr_cap}, just as described.",
        "Second time ordering this {noun}. {attr_cap} and great value.",
    ),
    4: (
        "Good {noun} overall ({attr} as advertised), though shipping took a while.",
        "Works as expected for {use}. I would buy it again.",
        "Nice {noun}; {attr} as advertised. Took off one star for the packaging.",
    ),
    3: (
        "The {noun} is fine. The {attr} part was not as good as I hoped, but okay for {use}.",
        "It does the job. Nothing special.",
    ),
    2: (
        "The listing says {attr} but that was not my experience. Might return it.",
        "Looked nice in the pictures but the {noun} feels cheap.",
    ),
    1: (
        "Stopped working after a week. So much for {attr}.",
        "Did not match the description. Returned the {noun}.",
    ),
}
_REVIEW_SCORES = (5, 5, 5, 5, 5, 4, 4, 4, 3, 3, 2, 1)
_REVIEW_COUNTS = (0, 1, 1, 2, 2, 3, 3, 4, 5)
_PRICE_ENDINGS = (0.99, 0.99, 0.99, 0.95, 0.49, 0.0, 0.97)


def _sample(random_, items: tuple, count: int) -> list:
    """``count`` distinct items in random order (a partial Fisher-Yates shuffle)."""
    pool = list(items)
    size = len(pool)
    for k in range(count):
        j = k + int(random_() * (size - k))
        pool[k], pool[j] = pool[j], pool[k]
    return pool[:count]


def _draw_options(random_, pool: OptionPool) -> tuple[str, ...]:
    values = pool.values
    count = pool.low + int(random_() * (pool.high - pool.low + 1))
    if pool.kind == "window":
        start = int(random_() * (len(values) - count + 1))
        return values[start : start + count]
    chosen = sorted(_sample(random_, tuple(range(len(values))), count))
    return tuple(values[k] for k in chosen)


def _draw_price(random_, low: float, high: float) -> float:
    dollars = math.exp(math.log(low) + (math.log(high) - math.log(low)) * random_())
    ending = _PRICE_ENDINGS[int(random_() * len(_PRICE_ENDINGS))]
    return round((max(1, int(dollars)) + ending) * 100) / 100


def generate_product(seed: int, index: int, asin: str, *, full: bool = True) -> Product:
    """Product ``index`` of the catalog with ``seed`` (see the module docstring).

    With ``full=False`` the product stops after what :func:`search_document` reads: the
    first bullet point only and no reviews (what it holds is identical to the full one's).
    """
    random_ = random.Random((seed << 40) | index).random

    def pick(items):
        return items[int(random_() * len(items))]

    t = PRODUCT_TYPES[bisect.bisect_right(_CUMULATIVE_WEIGHTS, random_() * _TOTAL_WEIGHT)]
    brand = pick(BRAND_HEADS) + pick(BRAND_TAILS)
    if random_() < 0.25:
        brand = f"{brand} {pick(BRAND_SUFFIXES[t.category])}"

    pool = t.attributes
    attributes = tuple(_sample(random_, pool, 3 + int(random_() * (min(6, len(pool)) - 2))))

    options: dict[str, tuple[str, ...]] = {}
    for spec in t.options:
        if random_() < spec.probability:
            options[spec.name] = _draw_options(random_, spec.pool)

    price = _draw_price(random_, *t.price)
    if options and random_() < 0.3:
        pricing: tuple[float, ...] = (price, _draw_price(random_, price * 1.15, price * 2.2))
    else:
        pricing = (price,)

    # Title: brand, audience, descriptors, maybe an attribute, the noun, maybe an ending.
    noun = pick(t.nouns)
    parts = [brand]
    lead = pick(t.leads)
    if lead:
        parts.append(lead)
    used = noun.lower()
    for word in _sample(random_, t.words, 2 if random_() < 0.5 else 1):
        if word.lower() not in used:
            parts.append(word)
            used += " " + word.lower()
    if random_() < 0.5 and attributes[0] not in used:
        parts.append(title_case(attributes[0]))
    parts.append(noun)
    title = " ".join(parts)
    if random_() < 0.6:
        title = f"{title} {pick(t.extras)}"
    if random_() < 0.5 and attributes[1] not in title.lower():
        title = f"{title}, {title_case(attributes[1])}"

    fill = {"noun": noun.lower(), "brand": brand, "use": pick(t.uses)}

    # Description: an opening about two attributes, a middle about a third, a closing.
    description = pick(_DESCRIPTION_OPEN).format(attr=attributes[0], attr2=attributes[1], **fill)
    if len(attributes) > 2:
        description += " " + pick(_DESCRIPTION_MIDDLE).format(attr=attributes[2], **fill)
    closing = pick(_DESCRIPTION_CLOSE)
    if closing:
        description += " " + closing.format(**fill)

    # Bullet points: 2-4 about attributes, maybe one about two more, one about the category.
    order = _sample(random_, attributes, len(attributes))
    count = 2 + int(random_() * 3)
    bullets = [
        template.format(A=attribute.upper(), attr=attribute, **fill)
        for attribute, template in zip(order[:count], _sample(random_, _BULLETS_ATTR, count))
    ]
    if not full:
        first = (bullets[0],)
        return Product(asin, title, t.category, t.path, t.query, pricing, options, attributes, first, description)
    if random_() < 0.6:
        bullets.append(pick(_BULLETS_PAIR).format(attr=order[-1], attr2=order[-2], **fill))
    extra = pick(_BULLETS_CATEGORY[t.category])
    if t.category == "furniture":
        dims = f"{15 + int(random_() * 56)} x {12 + int(random_() * 29)} x {16 + int(random_() * 57)} inches"
        extra = extra.format(dims=dims, load=100 + 25 * int(random_() * 20), **fill)
    else:
        extra = extra.format(**fill)
    bullets.append(extra)

    # Reviews.
    reviews = []
    for _ in range(pick(_REVIEW_COUNTS)):
        score = pick(_REVIEW_SCORES)
        attribute = pick(attributes)
        capitalised = attribute[:1].upper() + attribute[1:]
        body = pick(_REVIEW_BODIES[score]).format(attr=attribute, attr_cap=capitalised, **fill)
        reviews.append(Review(score=score, title=pick(_REVIEW_TITLES[score]), body=body))
    rating = round(sum(r.score for r in reviews) / len(reviews), 1) if reviews else None

    return Product(
        asin=asin,
        title=title,
        category=t.category,
        product_category=t.path,
        query=t.query,
        pricing=pricing,
        options=options,
        attributes=attributes,
        bullet_points=tuple(bullets),
        description=description,
        reviews=tuple(reviews),
        rating=rating,
    )


# ---- the catalog ---------------------------------------------------------------------------------


class GeneratedCatalog:
    """A deterministic catalog of ``num_products`` generated products (see the module docstring).

    ``num_goals`` goals (default 12,087, the size of the original's human instruction set)
    are generated lazily on the first call of :meth:`goals`; see
    :mod:`~agentgym.environments.webshop.goals`. Thread-safe; ``product`` keeps the last
    ``cache_size`` products.
    """

    def __init__(
        self,
        num_products: int = DEFAULT_NUM_PRODUCTS,
        seed: int = 0,
        *,
        num_goals: int | None = None,
        cache_size: int = 4096,
    ) -> None:
        if not 1 <= num_products <= min(ASIN_MODULUS, _MAX_PRODUCTS):
            raise ValueError(f"num_products must be between 1 and {ASIN_MODULUS:,}, got {num_products}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.num_products = num_products
        self.seed = seed
        self.num_goals = num_goals
        self.name = f"generated-{num_products}-seed{seed}" + (f"-goals{num_goals}" if num_goals is not None else "")
        # The ASIN bijection x = (i * a + b) mod 36**8, with a coprime to 36.
        mixer = random.Random(f"webshop-asin-{seed}")
        multiplier = mixer.randrange(ASIN_MODULUS // 7, ASIN_MODULUS)
        while math.gcd(multiplier, 6) != 1:
            multiplier += 1
        self._asin_multiplier = multiplier
        self._asin_inverse = pow(multiplier, -1, ASIN_MODULUS)
        self._asin_offset = mixer.randrange(ASIN_MODULUS)
        self._cache = ProductCache(cache_size)
        self._lock = threading.Lock()
        self._goals: list[Goal] | None = None

    def __repr__(self) -> str:
        return f"GeneratedCatalog(num_products={self.num_products}, seed={self.seed})"

    def __len__(self) -> int:
        return self.num_products

    def asin(self, index: int) -> str:
        """The ASIN of product ``index``."""
        self._check(index)
        x = (index * self._asin_multiplier + self._asin_offset) % ASIN_MODULUS
        digits = []
        for _ in range(ASIN_DIGITS):
            x, digit = divmod(x, 36)
            digits.append(_BASE36[digit])
        return "B0" + "".join(reversed(digits))

    def index_of(self, asin: str) -> int:
        """The index of the product with ``asin`` (case-insensitive); ``KeyError`` if none."""
        code = asin.upper() if isinstance(asin, str) else ""
        if len(code) != 2 + ASIN_DIGITS or not code.startswith("B0") or not code[2:].isalnum() or not code.isascii():
            raise KeyError(asin)
        x = int(code[2:], 36)
        index = (x - self._asin_offset) * self._asin_inverse % ASIN_MODULUS
        if index >= self.num_products:
            raise KeyError(asin)
        return index

    def product(self, index: int) -> Product:
        """Product ``index``, computed from (seed, index) or taken from the small cache."""
        return self._cache.get(index, lambda i: generate_product(self.seed, i, self.asin(i)))

    def drawn_price(self, index: int) -> float:
        """The original's charge for product ``index``: its single price, or for a price range
        ``uniform(low, high)`` from ``random.Random(f"webshop-price-{seed}-{index}")`` (the
        original draws from Python's unseeded generator at load; here each product has its own
        seeded draw, so the price does not depend on the catalog size or on load order)."""
        pricing = self.product(index).pricing
        if len(pricing) < 2:
            return pricing[0]
        return random.Random(f"webshop-price-{self.seed}-{index}").uniform(pricing[0], pricing[1])

    def search_text(self, index: int) -> str:
        """The text the search engine indexes for product ``index`` (see :func:`search_document`)."""
        product = self._cache.peek(index)
        if product is None:  # indexing walks the whole catalog once: do not churn the cache
            product = generate_product(self.seed, index, self.asin(index), full=False)
        return search_document(product)

    def goals(self) -> list[Goal]:
        """The catalog's goals in split order (test = first 500, dev = next 1,000, train = rest)."""
        if self._goals is None:
            goals = generate_goals(self, self.num_goals)
            with self._lock:
                if self._goals is None:
                    self._goals = goals
        return self._goals

    def _check(self, index: int) -> None:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.num_products:
            raise IndexError(f"product index {index!r} is outside 0..{self.num_products - 1}")


# ---- choosing a catalog ---------------------------------------------------------------------

#: Catalogs made by :func:`load_catalog`, shared while anything holds them.
_LOADED: weakref.WeakValueDictionary[tuple, Catalog] = weakref.WeakValueDictionary()
_LOADED_LOCK = threading.Lock()


def load_catalog(source: str | os.PathLike | None = None, *, num_products: int | None = None) -> Catalog:
    """The catalog a source string names; the same object for the same source while it is in use.

    * ``None``, ``""`` or ``"generated"``: ``GeneratedCatalog(num_products)`` (default
      20,000 products), seed 0;
    * ``"generated:N"`` or ``"generated:N:SEED"``: ``GeneratedCatalog(N, SEED)`` (``N`` wins
      over ``num_products``); ``N`` may use ``_`` or a ``k``/``m`` suffix (``generated:100k``,
      ``generated:1m``);
    * a folder holding the original WebShop files, or the path of an ``items_shuffle*.json``
      file: :class:`~agentgym.environments.webshop.original.OriginalCatalog`, keeping the
      first ``num_products`` products of the file if given.

    The env reads ``WEBSHOP_DATA`` and passes it here. Catalogs are read-only, so every env
    made with the same source shares one (a weak reference keeps it only while in use).
    """
    key = _source_key(source, num_products)
    with _LOADED_LOCK:
        catalog = _LOADED.get(key)
        if catalog is None:
            catalog = _make_catalog(key)
            _LOADED[key] = catalog
    return catalog


def _source_key(source: str | os.PathLike | None, num_products: int | None) -> tuple:
    text = "" if source is None else os.fspath(source).strip()
    if text in ("", "generated"):
        return ("generated", num_products or DEFAULT_NUM_PRODUCTS, 0)
    if text.startswith("generated:"):
        fields = text.split(":")[1:]
        if not 1 <= len(fields) <= 2:
            raise ValueError(f"expected 'generated:N' or 'generated:N:SEED', got {text!r}")
        return ("generated", _parse_count(fields[0]), int(fields[1]) if len(fields) == 2 else 0)
    path = os.path.abspath(os.path.expanduser(text))
    if not os.path.exists(path):
        raise FileNotFoundError(f"WebShop data source {text!r}: no such file or folder")
    return ("original", path, num_products)


def _parse_count(text: str) -> int:
    text = text.strip().lower().replace("_", "").replace(",", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    if scale > 1:
        text = text[:-1]
    try:
        value = float(text) * scale
    except ValueError:
        raise ValueError(f"not a product count: {text!r}") from None
    if value != int(value) or value < 1:
        raise ValueError(f"not a product count: {text!r}")
    return int(value)


def _make_catalog(key: tuple) -> Catalog:
    if key[0] == "generated":
        return GeneratedCatalog(key[1], key[2])
    from agentgym.environments.webshop.original import OriginalCatalog

    return OriginalCatalog(key[1], num_products=key[2])
