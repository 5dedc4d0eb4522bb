"""The shop's generated content: catalogue, customers, orders and reviews, deterministic from a seed.

Everything is drawn from the word lists in ``data/`` (``catalogue.yaml``: categories, kinds of
product and their attributes; ``words.yaml``: brands, styles, colours, names, places, review
phrases). The result is plain JSON that ``server/shopapp/management/commands/shop_seed.py`` loads
into django-oscar's database, in bulk, inside the site's own venv.

Guarantees the templates rely on: product titles and UPCs are unique; order numbers are unique;
one customer has strictly the most orders; a customer reviews a product at most once.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: The statuses of an order and the moves the dashboard offers from each (django-oscar's pipeline).
ORDER_PIPELINE: dict[str, list[str]] = {
    "Pending": ["Being processed", "Cancelled"],
    "Being processed": ["Shipped", "Cancelled"],
    "Shipped": ["Complete"],
    "Complete": [],
    "Cancelled": [],
}
#: The password of every seeded account (logins are seeded sessions; this is for a human trying the site).
PASSWORD = "agentgym-shop"
ADMIN = {"username": "admin", "email": "admin@example.com", "first_name": "Alex", "last_name": "Morgan"}


@cache
def word_lists() -> dict[str, Any]:
    """The data files (``catalogue.yaml`` and ``words.yaml``) as one mapping."""
    folder = resources.files(__package__).joinpath("data")
    data: dict[str, Any] = {}
    for name in ("catalogue.yaml", "words.yaml"):
        data.update(yaml.safe_load(folder.joinpath(name).read_text()))
    return data


def session_key(seed: int, username: str) -> str:
    """The seeded session key of ``username`` (32 lowercase hex characters, as Django's keys)."""
    return hashlib.sha256(f"agentgym-shop:{seed}:{username}".encode()).hexdigest()[:32]


def _slug(text: str) -> str:
    return "-".join("".join(ch if ch.isalnum() else " " for ch in text.lower()).split())


def _attribute_value(top: dict[str, Any], code: str, brand: str, colour: str, rng: random.Random) -> str:
    if code == "brand":
        return brand
    if code == "colour":
        return colour
    plural = {
        "material": "materials",
        "size": "sizes",
        "warranty": "warranties",
        "power": "powers",
        "capacity": "capacities",
        "weight": "weights",
        "format": "formats",
        "pages": "pages",
        "age": "ages",
        "volume": "volumes",
        "skin_type": "skin_types",
    }[code]
    return str(rng.choice(top[plural]))


def _products(words: dict[str, Any], rng: random.Random, per_category: int) -> list[dict[str, Any]]:
    products: list[dict[str, Any]] = []
    titles: set[str] = set()
    added = dt.datetime(2023, 1, 1, tzinfo=dt.timezone.utc)
    for top in words["categories"]:
        for child in top["children"]:
            low, high = child["price"]
            for _ in range(per_category):
                while True:
                    brand, style, noun = (
                        rng.choice(words["brands"]),
                        rng.choice(words["styles"]),
                        rng.choice(child["nouns"]),
                    )
                    colour = rng.choice(words["colours"])
                    title = (
                        f"{brand} {style} {colour} {noun}"
                        if "colour" in top["attributes"]
                        else f"{brand} {style} {noun}"
                    )
                    if title not in titles:
                        titles.add(title)
                        break
                attributes = {code: _attribute_value(top, code, brand, colour, rng) for code in top["attributes"]}
                price = round(rng.uniform(low, high)) - rng.choice([0.01, 0.01, 0.05, 0.51])
                upc = f"{rng.randrange(10**11, 10**12)}{len(products) % 10}"
                details = ", ".join(
                    f"{code.replace('_', ' ')}: {value}" for code, value in attributes.items() if code != "brand"
                )
                products.append(
                    {
                        "upc": upc,
                        "title": title,
                        "slug": _slug(title),
                        "category": child["name"],
                        "class": top["name"],
                        "noun": noun,
                        "description": f"The {style.lower()} {noun.lower()} from {brand}. {details[:1].upper()}{details[1:]}.",  # noqa: E501
                        "price": f"{max(price, 1.99):.2f}",
                        "stock": rng.choice([0, 0, rng.randrange(1, 10)] + [rng.randrange(1, 250)] * 5),
                        "attributes": attributes,
                        "added": (added + dt.timedelta(minutes=rng.randrange(0, 1_000_000))).isoformat(),
                    }
                )
    # UPCs: unique by construction is not guaranteed by the draw; make it so.
    seen: set[str] = set()
    for product in products:
        while product["upc"] in seen:
            product["upc"] = str(int(product["upc"]) + 1)
        seen.add(product["upc"])
    return products


def _customers(words: dict[str, Any], rng: random.Random, count: int) -> list[dict[str, Any]]:
    customers: list[dict[str, Any]] = []
    used: set[str] = set()
    start = dt.datetime(2022, 1, 1, tzinfo=dt.timezone.utc)
    for _ in range(count):
        first, last = rng.choice(words["first_names"]), rng.choice(words["last_names"])
        base = f"{first}.{last}".lower()
        username, number = base, 1
        while username in used:
            number += 1
            username = f"{base}{number}"
        used.add(username)
        customers.append(
            {
                "username": username,
                "email": f"{username}@example.com",
                "first_name": first,
                "last_name": last,
                "city": rng.choice(words["cities"]),
                "street": f"{rng.randrange(1, 200)} {rng.choice(words['streets'])}",
                "postcode": f"{rng.choice('ABCDEGHKLMNS')}{rng.choice('ABEHLMNW')}{rng.randrange(1, 30)} "
                f"{rng.randrange(1, 10)}{rng.choice('ABDEFGHJLNPQRSTUWXYZ')}{rng.choice('ABDEFGHJLNPQRSTUWXYZ')}",
                "joined": (start + dt.timedelta(days=rng.randrange(0, 700))).isoformat(),
            }
        )
    return customers


def _orders(
    products: list[dict[str, Any]], customers: list[dict[str, Any]], rng: random.Random, count: int
) -> list[dict[str, Any]]:
    # A few loyal customers order much more than the rest (weights ~ 1/rank).
    weights = [1.0 / (rank + 25) for rank in range(len(customers))]
    owners = rng.choices(range(len(customers)), weights=weights, k=count)
    counts = [owners.count(index) for index in range(len(customers))]
    top = max(counts)
    if counts.count(top) > 1:  # make the most loyal customer unique
        owners.append(counts.index(top))
    first = dt.datetime(2024, 1, 1, 8, tzinfo=dt.timezone.utc)
    span = 680 * 24 * 3600
    times = sorted(rng.randrange(0, span) for _ in owners)
    orders = []
    for index, (owner, offset) in enumerate(zip(owners, times)):
        age = 1 - offset / span  # 0: newest
        if rng.random() < 0.05:
            status = "Cancelled"
        elif age < 0.02:
            status = "Pending"
        elif age < 0.05:
            status = rng.choice(["Pending", "Being processed"])
        elif age < 0.1:
            status = rng.choice(["Being processed", "Shipped"])
        elif age < 0.2:
            status = rng.choice(["Shipped", "Complete"])
        else:
            status = "Complete"
        lines = [
            {"upc": product["upc"], "quantity": rng.choice([1, 1, 1, 2, 2, 3]), "unit_price": product["price"]}
            for product in rng.sample(products, rng.choice([1, 1, 2, 2, 3, 4]))
        ]
        orders.append(
            {
                "number": str(100001 + index),
                "customer": customers[owner]["username"],
                "status": status,
                "placed": (first + dt.timedelta(seconds=offset)).isoformat(),
                "shipping": rng.choice(["0.00", "3.95", "4.99"]),
                "lines": lines,
            }
        )
    return orders


def _reviews(
    words: dict[str, Any], products: list[dict[str, Any]], customers: list[dict[str, Any]], rng: random.Random
) -> list[dict[str, Any]]:
    reviews = []
    start = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    for product in products:
        # Each product has its own quality: most of its reviews sit near it.
        quality = rng.choice([2, 3, 3, 4, 4, 4, 5, 5])
        for customer in rng.sample(customers, rng.choice([0, 0, 1, 1, 2, 2, 3, 4, 5, 7])):
            score = min(5, max(1, quality + rng.choice([-2, -1, 0, 0, 0, 1])))
            sentences = rng.sample(words["review_sentences"][score], 2)
            reviews.append(
                {
                    "upc": product["upc"],
                    "customer": customer["username"],
                    "score": score,
                    "title": rng.choice(words["review_titles"][score]),
                    "body": " ".join(sentences),
                    "date": (start + dt.timedelta(minutes=rng.randrange(0, 900_000))).isoformat(),
                }
            )
    return reviews


def generate(seed: int, *, per_category: int = 80, customers: int = 900, orders: int = 3000) -> dict[str, Any]:
    """The shop's content from ``seed`` (JSON-serialisable; see the module docstring)."""
    words = word_lists()
    rng = random.Random(f"shop-{seed}")
    products = _products(words, rng, per_category)
    people = _customers(words, rng, customers)
    categories = [
        {"name": top["name"], "parent": None, "attributes": top["attributes"]} for top in words["categories"]
    ] + [{"name": child["name"], "parent": top["name"]} for top in words["categories"] for child in top["children"]]
    return {
        "seed": seed,
        "categories": categories,
        "products": products,
        "customers": people,
        "admin": ADMIN,
        "password": PASSWORD,
        "orders": _orders(products, people, rng, orders),
        "reviews": _reviews(words, products, people, rng),
        "pipeline": ORDER_PIPELINE,
        "sessions": {user: session_key(seed, user) for user in [ADMIN["username"]] + [c["username"] for c in people]},
    }
