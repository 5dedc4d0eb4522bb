"""The original WebShop data: a loader (:class:`OriginalCatalog`) and an exporter (:func:`export_original`).

Files (the original's ``data/`` folder; explicit paths may be given instead):

* ``items_shuffle*.json``: a JSON list of products with the scraped fields (``asin``,
  ``name``, ``category``, ``query``, ``product_category``, ``full_description``,
  ``small_description``, ``pricing``, ``customization_options``, ``images`` ...);
* ``items_ins_v2*.json``: ``{asin: {"attributes": [...], "instruction": ...,
  "instruction_attributes": [...]}}``, the products' attributes;
* ``items_human_ins.json``: ``{asin: [{"instruction": ..., "instruction_attributes": [...],
  "instruction_options": [...], "options": ["size: 9.5", ...], ...}, ...]}``, the human
  instructions;
* ``reviews.json`` (optional): ``[{"asin": ..., "reviews": [{"title", "score" or "stars",
  "review"}], "average_rating": ...}]``.

When a folder holds both the full files (``items_shuffle.json``) and the 1,000-product ones
(``items_shuffle_1000.json``), the full ones are used; pass the file paths to choose.

Cleaning follows the original's ``engine.load_products``: products whose ASIN is ``nan``
or longer than 10 characters, and repeated ASINs, are skipped; a missing price becomes
``$100.0``; prices are the dollar amounts of the ``pricing`` string (``"$12.99"`` or
``"$10.99 - $24.99"``, the first two kept); option names are lower-cased and option values
stripped, lower-cased, with ``/`` turned into `` | ``; products without attributes in
``items_ins_v2`` get ``["DUMMY_ATTR"]``; a review's ``stars`` is its score and ``review``
its body. ``num_products`` keeps the first N products of the file before cleaning, as the
original's ``num_products`` does.

Goals are the original's human goals (``goal.get_human_goals``): for each product in file
order and each of its human instructions with at least one attribute, a goal with the
instruction (leading and trailing full stops removed), its attributes, its options, and a
price cap drawn as the original draws it (see :mod:`~agentgym.environments.webshop.goals`)
then appended to the text; then shuffled with seed 233 (test = the first 500, dev = the next
1,000, train = the rest).

How close the goals are to the original's: instruction texts, attributes, options, their
number and their order after the shuffle are exactly the original's. The price caps are
drawn as in the original (first, for every product with a price range, its price
``uniform(low, high)``; then, per goal in order, ``sample`` of two of the first four
multiples of 10 above that price), but the original draws them from Python's unseeded
global generator, so no two runs of the original agree on them. Here they come from
``random.Random(price_seed)`` (default 0) in the same order with the same calls: the
original run after ``random.seed(price_seed)`` (and nothing else drawing in between) gets
the same caps. The ranged products' drawn prices are :meth:`OriginalCatalog.drawn_price`;
``Product.price`` stays the low end of the range.

Goal options: the original keeps ``instruction_options`` as a list of values; here they
are a dict whose names come from the instruction's ``"options"`` entries (``"size: 9.5"``)
or, failing that, from the target option that offers the value (else ``"option N"``); a
name used twice gets a suffix (``"color (2)"``), so values and their count are kept.

Memory: each file is read once, incrementally (:func:`iter_json`), so loading never holds a
whole JSON document. A product is kept as one zlib-compressed JSON record of the fields
above (no images or scraped extras) in one buffer, compressed with a dictionary made of the
first 256 products; attributes as tuples of shared strings; reviews compressed apart. A
product is decoded when asked for (about 30 us), with a small cache of recent ones.

Exporter: :func:`export_original` writes a catalog and its goals in these formats (plus
``reviews.json``), so the original WebShop code can load our generated data. Human
instructions carry one extra key, ``"price_upper"``, that the original ignores (it draws
its own caps) and :class:`OriginalCatalog` uses, so that export then load gives back the
same goals exactly.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import random
import re
import threading
import zlib
from array import array
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import orjson

from agentgym.environments.webshop.catalog import search_document
from agentgym.environments.webshop.data import Catalog, Goal, Product, ProductCache, Review
from agentgym.environments.webshop.goals import (
    price_cap,
    price_text,
    shuffle_goals,
    synthetic_instruction,
    unshuffle_goals,
)
from agentgym.environments.webshop.vocabulary import product_type

DUMMY_ATTRIBUTE = "DUMMY_ATTR"
_READ_CHUNK = 1 << 22
_DICTIONARY_RECORDS = 256  # products whose text makes the shared compression dictionary
_DICTIONARY_BYTES = 8192
_SCALAR_END = re.compile(r"[,\]}:\s]")


# ---- reading big JSON files one element at a time ---------------------------------------------


def iter_json(path: str | os.PathLike[str]) -> Iterator[Any]:
    """The elements of a top-level JSON list, or the ``(key, value)`` pairs of a top-level object.

    Reads the file in chunks and decodes one element at a time, so a multi-gigabyte file
    never sits in memory as a whole.
    """
    decoder = json.JSONDecoder()
    with open(path, encoding="utf-8") as file:
        buffer, position, at_end = "", 0, False

        def fill() -> bool:
            nonlocal buffer, position, at_end
            chunk = file.read(_READ_CHUNK)
            at_end = not chunk
            buffer = buffer[position:] + chunk
            position = 0
            return bool(chunk)

        def skip_space() -> str:
            nonlocal position
            while True:
                while position < len(buffer) and buffer[position] in " \t\r\n":
                    position += 1
                if position < len(buffer):
                    return buffer[position]
                if not fill():
                    return ""

        def decode() -> Any:
            nonlocal position
            if position >= len(buffer):
                raise ValueError(f"{path}: unexpected end of file")
            if buffer[position] not in '[{"':  # a number or literal: first read on to its end
                while not _SCALAR_END.search(buffer, position) and fill():
                    pass
            while True:
                try:
                    value, end = decoder.raw_decode(buffer, position)
                except json.JSONDecodeError:  # a list, object or string cut by the chunk boundary
                    if at_end or not fill():
                        raise
                    continue
                position = end
                return value

        fill()
        opening = skip_space()
        if opening not in "[{" or not opening:
            raise ValueError(f"{path}: expected a JSON list or object")
        closing = "]" if opening == "[" else "}"
        position += 1
        if skip_space() == closing:
            return
        while True:
            skip_space()
            if opening == "[":
                yield decode()
            else:
                key = decode()
                if skip_space() != ":":
                    raise ValueError(f"{path}: expected ':' after key {key!r}")
                position += 1
                skip_space()
                yield key, decode()
            separator = skip_space()
            position += 1
            if separator == closing:
                return
            if separator != ",":
                raise ValueError(f"{path}: expected ',' or {closing!r}, got {separator!r}")


# ---- the original's cleaning -------------------------------------------------------------------


def parse_pricing(pricing: Any) -> tuple[float, ...]:
    """Prices as the original reads them: the dollar amounts of a ``"$a"``/``"$a - $b"`` string, at most two."""
    if not pricing:
        return (100.0,)
    if isinstance(pricing, (int, float)):
        return (float(pricing),)
    if isinstance(pricing, (list, tuple)):
        prices = [float(p) for p in pricing if isinstance(p, (int, float)) or _is_number(p)]
    else:
        prices = []
        for part in str(pricing).split("$")[1:]:
            digits = re.sub(r"[^\d.]", "", part)
            try:
                prices.append(float(Decimal(digits)))
            except InvalidOperation:
                continue
    return tuple(prices[:2]) if prices else (100.0,)


def _is_number(text: Any) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def clean_options(customization_options: Any) -> dict[str, tuple[str, ...]]:
    """Options as the original cleans them: lower-case names; values stripped, lower-cased, '/' -> ' | '."""
    options: dict[str, tuple[str, ...]] = {}
    if not isinstance(customization_options, dict):
        return options
    for name, contents in customization_options.items():
        if contents is None:
            continue
        values = []
        for content in contents:
            value = content.get("value") if isinstance(content, dict) else content
            if value is None:
                continue
            values.append(str(value).strip().replace("/", " | ").lower())
        options[str(name).lower()] = tuple(values)
    return options


def _reviews(entry: dict | None) -> tuple[tuple[Review, ...], float | None]:
    if not entry:
        return (), None
    reviews = []
    for review in entry.get("reviews") or ():
        score = review.get("score", review.get("stars"))
        try:
            score = int(float(score))
        except (TypeError, ValueError):
            score = 0
        reviews.append(Review(score=score, title=str(review.get("title") or ""), body=str(review.get("review") or "")))
    rating = entry.get("average_rating")
    try:
        rating = float(rating) if rating is not None else None
    except (TypeError, ValueError):
        rating = None
    return tuple(reviews), rating


def _text(value: Any) -> str:
    return "" if value is None else str(value)


# ---- the catalog -------------------------------------------------------------------------------


class OriginalCatalog:
    """The original WebShop products and human goals (see the module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        products_file: str | os.PathLike[str] | None = None,
        attributes_file: str | os.PathLike[str] | None = None,
        human_file: str | os.PathLike[str] | None = None,
        reviews_file: str | os.PathLike[str] | None = None,
        num_products: int | None = None,
        price_seed: int = 0,
        cache_size: int = 4096,
    ) -> None:
        files = _find_files(path, products_file, attributes_file, human_file, reviews_file)
        self.files = files
        self.price_seed = price_seed
        stat = os.stat(files["products"])
        digest = hashlib.blake2b(
            f"{os.path.abspath(files['products'])}|{stat.st_size}|{stat.st_mtime_ns}|{num_products}|"
            f"{files.get('attributes')}|{files.get('reviews')}".encode(),
            digest_size=6,
        ).hexdigest()
        rng = random.Random(price_seed)
        self._load_products(files["products"], num_products, rng)
        self._goal_rng_state = rng.getstate()
        self._attributes: list[tuple[str, ...] | None] = [None] * self.num_products
        if files.get("attributes"):
            self._load_attributes(files["attributes"])
        self._reviews: list[bytes | None] = [None] * self.num_products
        if files.get("reviews"):
            self._load_reviews(files["reviews"])
        self._instructions: list[tuple[int, list]] = []
        if files.get("human"):
            human = dict(iter_json(files["human"]))  # small: about 12,000 instructions
            for asin, instructions in human.items():
                index = self._index.get(asin)
                if index is not None and isinstance(instructions, list):
                    self._instructions.append((index, instructions))
            self._instructions.sort(key=lambda item: item[0])  # goals are made in product order
        self.name = f"original-{Path(files['products']).stem}-{self.num_products}-{digest}"
        self._cache = ProductCache(cache_size)
        self._lock = threading.Lock()
        self._goals: list[Goal] | None = None

    # ---- loading: one pass over each file, keeping compact records only ----

    def _load_products(self, path: str, num_products: int | None, rng: random.Random) -> None:
        self._index: dict[str, int] = {}
        self._blob = bytearray()
        self._offsets = array("Q", [0])
        self._ranged_prices = array("d")
        self._ranged_at: dict[int, int] = {}
        self._zdict = b""
        pending: list[bytes] | None = []  # the first records, until they make the compression dictionary
        for position, raw in enumerate(iter_json(path)):
            if num_products is not None and position >= num_products:
                break
            asin = raw.get("asin") if isinstance(raw, dict) else None
            if not isinstance(asin, str) or asin == "nan" or len(asin) > 10 or asin in self._index:
                continue
            index = len(self._index)
            self._index[asin] = index
            pricing = parse_pricing(raw.get("pricing"))
            if len(pricing) >= 2:  # the original's generate_product_prices: one uniform draw per range
                self._ranged_at[index] = len(self._ranged_prices)
                self._ranged_prices.append(rng.uniform(*pricing[:2]))
            bullets = raw.get("small_description")
            bullets = bullets if isinstance(bullets, list) else ([] if bullets is None else [bullets])
            record = orjson.dumps(
                [
                    asin,
                    _text(raw.get("name")),
                    _text(raw.get("category")),
                    _text(raw.get("product_category")),
                    _text(raw.get("query")).lower().strip(),
                    pricing,
                    clean_options(raw.get("customization_options")),
                    [_text(b) for b in bullets],
                    _text(raw.get("full_description")),
                ]
            )
            if pending is None:
                self._append(record)
                continue
            pending.append(record)
            if len(pending) == _DICTIONARY_RECORDS:
                self._start_compression(pending)
                pending = None
        if pending:
            self._start_compression(pending)
        self.num_products = len(self._index)

    def _start_compression(self, records: list[bytes]) -> None:
        self._zdict = b"".join(records)[-_DICTIONARY_BYTES:]
        for record in records:
            self._append(record)

    def _append(self, record: bytes) -> None:
        compressor = zlib.compressobj(6, zdict=self._zdict)
        self._blob += compressor.compress(record) + compressor.flush()
        self._offsets.append(len(self._blob))

    def _load_attributes(self, path: str) -> None:
        canonical: dict[str, str] = {}
        for asin, entry in iter_json(path):
            index = self._index.get(asin)
            if index is not None and isinstance(entry, dict) and "attributes" in entry:
                values = (str(a) for a in entry["attributes"] or ())
                self._attributes[index] = tuple(canonical.setdefault(a, a) for a in values)

    def _load_reviews(self, path: str) -> None:
        for entry in iter_json(path):
            index = self._index.get(entry.get("asin")) if isinstance(entry, dict) else None
            if index is not None:
                reviews, rating = _reviews(entry)
                self._reviews[index] = zlib.compress(
                    orjson.dumps([[[r.score, r.title, r.body] for r in reviews], rating])
                )

    # ---- the Catalog interface ----

    def __repr__(self) -> str:
        return f"OriginalCatalog({self.files['products']!r}, {self.num_products} products)"

    def __len__(self) -> int:
        return self.num_products

    def index_of(self, asin: str) -> int:
        """The index of the product with ``asin``; ``KeyError`` if none (upper case tried too)."""
        index = self._index.get(asin)
        if index is None and isinstance(asin, str):
            index = self._index.get(asin.upper())
        if index is None:
            raise KeyError(asin)
        return index

    def product(self, index: int) -> Product:
        return self._cache.get(index, self._decode)

    def search_text(self, index: int) -> str:
        product = self._cache.peek(index)
        return search_document(product if product is not None else self._decode(index, with_reviews=False))

    def drawn_price(self, index: int) -> float:
        """The price the original charges: the single price, or the seeded uniform draw in the range."""
        at = self._ranged_at.get(index)
        return self._ranged_prices[at] if at is not None else self.product(index).pricing[0]

    def goals(self) -> list[Goal]:
        """The human goals, shuffled with seed 233 (test = first 500, dev = next 1,000, train = rest)."""
        if self._goals is None:
            goals = self._human_goals()
            with self._lock:
                if self._goals is None:
                    self._goals = goals
        return self._goals

    def _decode(self, index: int, *, with_reviews: bool = True) -> Product:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < self.num_products:
            raise IndexError(f"product index {index!r} is outside 0..{self.num_products - 1}")
        data = self._blob[self._offsets[index] : self._offsets[index + 1]]
        fields = orjson.loads(zlib.decompressobj(zdict=self._zdict).decompress(data))
        asin, title, category, path, query, pricing, options, bullets, description = fields
        reviews: tuple[Review, ...] = ()
        rating = None
        packed = self._reviews[index] if with_reviews else None
        if packed is not None:
            review_rows, rating = orjson.loads(zlib.decompress(packed))
            reviews = tuple(Review(score, title_, body) for score, title_, body in review_rows)
        attributes = self._attributes[index]
        return Product(
            asin=asin,
            title=title,
            category=category,
            product_category=path,
            query=query,
            pricing=tuple(pricing),
            options={name: tuple(values) for name, values in options.items()},
            attributes=(DUMMY_ATTRIBUTE,) if attributes is None else attributes,
            bullet_points=tuple(bullets),
            description=description,
            reviews=reviews,
            rating=rating,
        )

    def _human_goals(self) -> list[Goal]:
        rng = random.Random()
        rng.setstate(self._goal_rng_state)
        goals = []
        for index, instructions in self._instructions:
            product = self.product(index)
            price = self.drawn_price(index)
            for instruction in instructions:
                attributes = instruction.get("instruction_attributes") if isinstance(instruction, dict) else None
                if not attributes:
                    continue  # the original skips goals without attributes (and draws nothing)
                cap = price_cap(price, rng)  # the same draws as the original's get_human_goals
                if "price_upper" in instruction:  # written by export_original: keep the exported cap
                    cap = float(instruction["price_upper"])
                goals.append(
                    Goal(
                        asin=product.asin,
                        instruction_text=_text(instruction.get("instruction")).strip(".") + price_text(cap),
                        attributes=tuple(str(a) for a in attributes),
                        goal_options=_goal_options(instruction, product),
                        price_upper=cap,
                        category=product.category,
                        query=product.query,
                        name=product.title,
                        product_category=product.product_category,
                    )
                )
        return shuffle_goals(goals)


def _goal_options(instruction: dict, product: Product) -> dict[str, str]:
    values = instruction.get("instruction_options") or []
    if isinstance(values, dict):
        return {str(name): str(value) for name, value in values.items()}
    named: dict[str, str] = {}
    for entry in instruction.get("options") or []:
        if isinstance(entry, str) and ": " in entry:
            name, value = entry.split(": ", 1)
            named.setdefault(value.strip().lower(), name.strip().lower())
    options: dict[str, str] = {}
    for number, value in enumerate(values, 1):
        value = str(value)
        name = named.get(value.strip().lower())
        if name is None:
            normalised = value.strip().replace("/", " | ").lower()
            name = next((n for n, vs in product.options.items() if normalised in vs), f"option {number}")
        key, copy = name, 1
        while key in options:
            copy += 1
            key = f"{name} ({copy})"
        options[key] = value
    return options


def _find_files(
    path: str | os.PathLike[str] | None,
    products: str | os.PathLike[str] | None,
    attributes: str | os.PathLike[str] | None,
    human: str | os.PathLike[str] | None,
    reviews: str | os.PathLike[str] | None,
) -> dict[str, str]:
    folder = None
    if path is not None:
        path = os.fspath(path)
        if os.path.isdir(path):
            folder = path
        elif os.path.isfile(path):
            products = products or path
            folder = os.path.dirname(path)
        else:
            raise FileNotFoundError(f"no such file or folder: {path}")
    files: dict[str, str] = {}
    if products is None:
        if folder is None:
            raise ValueError("give a folder of the original WebShop files or products_file=")
        products = _pick_file(folder, "items_shuffle")
    files["products"] = os.fspath(products)
    match = re.match(r"items_shuffle(.*)\.json$", os.path.basename(files["products"]))
    suffix = match.group(1) if match else ""
    folder = folder or os.path.dirname(files["products"])
    found_attributes = attributes or _pick_file(folder, "items_ins_v2", suffix, required=False)
    found_human = human or _pick_file(folder, "items_human_ins", "", required=False)
    found_reviews = reviews or _pick_file(folder, "reviews", "", required=False)
    for key, value in (("attributes", found_attributes), ("human", found_human), ("reviews", found_reviews)):
        if value:
            files[key] = os.fspath(value)
    return files


def _pick_file(folder: str, prefix: str, suffix: str | None = None, *, required: bool = True) -> str | None:
    if suffix is not None and os.path.isfile(os.path.join(folder, f"{prefix}{suffix}.json")):
        return os.path.join(folder, f"{prefix}{suffix}.json")
    if os.path.isfile(os.path.join(folder, f"{prefix}.json")):
        return os.path.join(folder, f"{prefix}.json")
    matches = sorted(glob.glob(os.path.join(glob.escape(folder), f"{prefix}*.json")))
    if len(matches) == 1:
        return matches[0]
    if required:
        raise FileNotFoundError(
            f"{folder}: expected one {prefix}*.json file, found {len(matches)}; pass the file path instead"
        )
    return matches[0] if matches else None


# ---- choosing a catalog ---------------------------------------------------------------------


# ---- writing the original's format -----------------------------------------------------------


def export_original(catalog: Catalog, folder: str | os.PathLike[str], num_goals: int | None = None) -> dict[str, Path]:
    """Write ``catalog`` and its goals as the original WebShop's data files; return their paths.

    Writes ``items_shuffle.json`` (every product), ``items_ins_v2.json`` (attributes, and
    for goal targets a plain instruction for the original's synthetic goals),
    ``items_human_ins.json`` (the goals, by target, in product order) and ``reviews.json``.
    ``num_goals`` keeps the first N goals of the split order (the test goals first); all
    by default. Loading the folder with :class:`OriginalCatalog` gives back the same
    products and, with all goals exported, the same goals in the same order.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    goals = catalog.goals()
    if num_goals is None:
        ordered = unshuffle_goals(goals)
    else:
        chosen = goals[:num_goals]
        ordered = sorted(chosen, key=lambda goal: catalog.index_of(goal.asin))  # stable: keeps order per target
    by_asin: dict[str, list[Goal]] = {}
    for goal in ordered:
        by_asin.setdefault(goal.asin, []).append(goal)
    paths = {
        "products": folder / "items_shuffle.json",
        "attributes": folder / "items_ins_v2.json",
        "human": folder / "items_human_ins.json",
        "reviews": folder / "reviews.json",
    }
    with (
        open(paths["products"], "wb") as products_file,
        open(paths["attributes"], "wb") as attributes_file,
        open(paths["reviews"], "wb") as reviews_file,
    ):
        products_file.write(b"[")
        attributes_file.write(b"{")
        reviews_file.write(b"[")
        first_review = True
        for index in range(len(catalog)):
            product = catalog.product(index)
            separator = b",\n" if index else b"\n"
            products_file.write(separator + orjson.dumps(_product_record(product)))
            target_goals = by_asin.get(product.asin)
            entry: dict[str, Any] = {"attributes": list(product.attributes)}
            if target_goals:
                kind = product_type(product.query)
                if kind is not None:
                    entry["instruction"] = synthetic_instruction(kind, target_goals[0].attributes)
                    entry["instruction_attributes"] = list(target_goals[0].attributes)
            attributes_file.write(separator + orjson.dumps(product.asin) + b": " + orjson.dumps(entry))
            if product.reviews or product.rating is not None:
                reviews_file.write((b"\n" if first_review else b",\n") + orjson.dumps(_review_record(product)))
                first_review = False
        products_file.write(b"\n]\n")
        attributes_file.write(b"\n}\n")
        reviews_file.write(b"\n]\n")
    human = {asin: [_instruction_record(goal) for goal in target_goals] for asin, target_goals in by_asin.items()}
    paths["human"].write_bytes(orjson.dumps(human, option=orjson.OPT_INDENT_2))
    return paths


def _price_string(pricing: tuple[float, ...]) -> str:
    return " - ".join(f"${price:.2f}" for price in pricing)


def _product_record(product: Product) -> dict[str, Any]:
    return {
        "asin": product.asin,
        "name": product.title,
        "category": product.category,
        "query": product.query,
        "product_category": product.product_category,
        "full_description": product.description,
        "small_description": list(product.bullet_points),
        "pricing": _price_string(product.pricing),
        "customization_options": {
            name: [{"value": value, "image": None} for value in values] for name, values in product.options.items()
        }
        or None,
        "images": [""],  # the original reads images[0]; generated products have no pictures
    }


def _review_record(product: Product) -> dict[str, Any]:
    return {
        "asin": product.asin,
        "reviews": [{"title": r.title, "score": r.score, "review": r.body} for r in product.reviews],
        "average_rating": product.rating,
    }


def _instruction_record(goal: Goal) -> dict[str, Any]:
    suffix = price_text(goal.price_upper)
    text = goal.instruction_text
    if suffix and text.endswith(suffix):
        text = text[: -len(suffix)]
    return {
        "asin": goal.asin,
        "instruction": text,
        "instruction_attributes": list(goal.attributes),
        "instruction_options": list(goal.goal_options.values()),
        "options": [f"{name}: {value}" for name, value in goal.goal_options.items()],
        "price_upper": goal.price_upper,
        "assignment_id": "",
        "worker_id": "generated",
    }


__all__ = [
    "OriginalCatalog",
    "clean_options",
    "export_original",
    "iter_json",
    "parse_pricing",
]
