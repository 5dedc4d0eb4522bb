"""WebShop catalogs: the generated catalog, its goals, the original-format loader and exporter."""

from __future__ import annotations

import collections
import json
import random
import statistics
import time
import tracemalloc
from pathlib import Path

import pytest

from agentgym.environments.webshop import original
from agentgym.environments.webshop.catalog import (
    GeneratedCatalog,
    generate_product,
    load_catalog,
    search_document,
)
from agentgym.environments.webshop.data import CATEGORIES
from agentgym.environments.webshop.goals import (
    DEFAULT_NUM_GOALS,
    DEV_GOALS,
    NO_PRICE_CAP,
    PRICE_RANGE,
    TEST_GOALS,
    price_cap,
    price_text,
    shuffle_goals,
    unshuffle_goals,
)
from agentgym.environments.webshop.original import OriginalCatalog, export_original, iter_json
from agentgym.environments.webshop.vocabulary import CATEGORY_WEIGHTS, PRODUCT_TYPES, product_type


@pytest.fixture(scope="module")
def default_catalog() -> GeneratedCatalog:
    return GeneratedCatalog()


@pytest.fixture(scope="module")
def sample(default_catalog: GeneratedCatalog) -> list:
    return [default_catalog.product(i) for i in range(3000)]


# ---- products --------------------------------------------------------------------------------


def test_products_are_deterministic_and_distinct():
    first, second = GeneratedCatalog(1000, seed=3), GeneratedCatalog(1000, seed=3)
    for index in (0, 1, 500, 999):
        assert first.product(index) == second.product(index)
        assert first.product(index) == generate_product(3, index, first.asin(index))  # not from the cache
    titles = {first.product(i).title for i in range(300)}
    assert len(titles) >= 295
    other_seed = GeneratedCatalog(1000, seed=4)
    assert sum(other_seed.product(i).title == first.product(i).title for i in range(100)) <= 2
    assert first.asin(0) != other_seed.asin(0)
    assert GeneratedCatalog(1_000_000, seed=3).product(999) == first.product(999)  # smaller catalogs are prefixes


def test_catalog_statistics(sample):
    counts = collections.Counter(p.category for p in sample)
    assert set(counts) == set(CATEGORIES)
    for category, weight in CATEGORY_WEIGHTS.items():
        assert abs(counts[category] / len(sample) - weight) < 0.04, (category, counts)
    types = collections.Counter(p.query for p in sample)
    assert len(types) == len(PRODUCT_TYPES) >= 100
    for category in CATEGORIES:
        assert sum(t.category == category for t in PRODUCT_TYPES) >= 18

    with_options = [p for p in sample if p.options]
    assert len(with_options) / len(sample) > 0.85
    names = collections.Counter(name for p in sample for name in p.options)
    assert {"size", "color", "flavor name", "scent", "style", "capacity"} <= set(names)
    assert names["color"] > 1000 and names["size"] > 1000
    for product in sample:
        kind = product_type(product.query)
        assert kind is not None and kind.category == product.category and kind.path == product.product_category
        assert product.product_category.count(" › ") >= 2
        assert 3 <= len(product.attributes) <= 6 and set(product.attributes) <= set(kind.attributes)
        assert len(set(product.attributes)) == len(product.attributes)
        assert 3 <= len(product.bullet_points) <= 6
        text = " ".join((product.title, *product.bullet_points, product.description)).lower()
        assert sum(attribute in text for attribute in product.attributes) >= 2
        for values in product.options.values():
            assert values and len(set(values)) == len(values)
            for value in values:  # unchanged by the original's cleaning
                assert value == value.strip().replace("/", " | ").lower()
        assert len(product.asin) == 10
        assert len(product.pricing) in (1, 2) and product.price == product.pricing[0] > 0
        if len(product.pricing) == 2:
            assert product.pricing[0] < product.pricing[1]
        low, high = kind.price
        assert low * 0.9 < product.price < high + 1
        for review in product.reviews:
            assert 1 <= review.score <= 5 and review.title and review.body
        if product.reviews:
            assert product.rating == round(statistics.mean(r.score for r in product.reviews), 1)
        else:
            assert product.rating is None
    prices = [p.price for p in sample]
    assert min(prices) < 10 and max(prices) > 300
    assert 0.1 < sum(len(p.pricing) == 2 for p in sample) / len(sample) < 0.4
    assert sum(bool(p.reviews) for p in sample) / len(sample) > 0.7
    assert len({p.title.split()[0] for p in sample}) > 500  # many brands


def test_search_text_is_the_original_search_document(default_catalog):
    for index in (0, 7, 19_999):
        product = default_catalog.product(index)
        text = default_catalog.search_text(index)
        assert text == search_document(product)
        assert product.title.lower() in text and product.bullet_points[0].lower() in text
        for name, values in product.options.items():
            assert f"{name}: {', '.join(values)}" in text
    fresh = GeneratedCatalog()  # nothing cached: the short path gives the same text
    assert fresh.search_text(11) == search_document(default_catalog.product(11))


def test_a_million_products_cost_no_memory_and_little_time():
    catalog = GeneratedCatalog(1_000_000, seed=7, cache_size=64)
    indices = [random.Random(1).randrange(1_000_000) for _ in range(2000)] + [0, 999_999]
    tracemalloc.start()
    start = time.perf_counter()
    for index in indices:
        catalog.product(index)
        catalog.search_text(index)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 5_000_000  # a small cache, nothing per product
    assert elapsed / len(indices) < 0.002  # about 0.07 ms per product and search text here
    assert len(catalog) == 1_000_000


def test_asin_round_trip():
    catalog = GeneratedCatalog(1_000_000)
    indices = [0, 1, 2, 35, 36, 999_999, *random.Random(2).sample(range(1_000_000), 2000)]
    asins = [catalog.asin(i) for i in indices]
    assert len(set(asins)) == len(set(indices))
    for index, asin in zip(indices, asins):
        assert asin.startswith("B0") and len(asin) == 10 and asin.isalnum() and asin.upper() == asin
        assert catalog.index_of(asin) == index
        assert catalog.index_of(asin.lower()) == index
        assert catalog.product(index).asin == asin
    small = GeneratedCatalog(10)
    out_of_range = next(a for a in asins if catalog.index_of(a) >= 10)
    for bad in ("", "B0", "X012345678", "B0ABC", "B0!!!!!!!!", out_of_range, None):
        with pytest.raises(KeyError):
            small.index_of(bad)
    for bad_index in (-1, 10, "3", True):
        with pytest.raises(IndexError):
            small.product(bad_index)
    with pytest.raises(ValueError):
        GeneratedCatalog(0)


# ---- goals -----------------------------------------------------------------------------------


def test_goals_are_many_and_satisfiable(default_catalog):
    goals = default_catalog.goals()
    assert len(goals) == DEFAULT_NUM_GOALS >= 5000
    assert default_catalog.goals() is goals  # cached
    assert len({g.asin for g in goals}) == len(goals)  # one goal per sampled target at 20,000 products
    without_options = 0
    for goal in goals:
        product = default_catalog.product(default_catalog.index_of(goal.asin))
        assert 1 <= len(goal.attributes) <= 3 and set(goal.attributes) <= set(product.attributes)
        for name, value in goal.goal_options.items():
            assert value in product.options[name]
        without_options += not goal.goal_options
        assert product.price <= goal.price_upper
        assert (goal.query, goal.category, goal.name, goal.product_category) == (
            product.query,
            product.category,
            product.title,
            product.product_category,
        )
        assert goal.instruction_text.endswith(price_text(goal.price_upper))
        base = goal.instruction_text[: len(goal.instruction_text) - len(price_text(goal.price_upper))]
        assert base == base.strip(".") == base.strip() and base == base.lower()
    assert 0.1 < without_options / len(goals) < 0.5


def test_price_cap_rule(default_catalog):
    assert price_cap(975.0, random.Random(0)) == 990.0  # candidates 980, 990: the larger of both
    assert price_cap(985.0, random.Random(0)) == NO_PRICE_CAP and price_text(NO_PRICE_CAP) == ""
    assert price_cap(995.0, random.Random(0)) == NO_PRICE_CAP
    assert {price_cap(45.5, random.Random(seed)) for seed in range(200)} == {60.0, 70.0, 80.0}
    assert {price_cap(50.0, random.Random(seed)) for seed in range(200)} == {70.0, 80.0, 90.0}
    for seed in range(20):  # the original's draw: sorted(random.sample(first four above, 2))[1]
        candidates = [p for p in PRICE_RANGE if p > 12.34][:4]
        assert price_cap(12.34, random.Random(seed)) == sorted(random.Random(seed).sample(candidates, 2))[1]
    assert price_text(40.0) == ", and price lower than 40.00 dollars"
    for goal in default_catalog.goals()[:2000]:
        price = default_catalog.product(default_catalog.index_of(goal.asin)).price
        candidates = [p for p in PRICE_RANGE if p > price][:4]
        if len(candidates) >= 2:
            assert goal.price_upper in candidates[1:]
        else:
            assert goal.price_upper == NO_PRICE_CAP


def test_goal_phrasing_varies(default_catalog):
    goals = default_catalog.goals()[:1000]
    openings = collections.Counter(" ".join(g.instruction_text.split()[:2]) for g in goals)
    assert len(openings) >= 20
    assert openings.most_common(1)[0][1] < 150
    assert len({g.instruction_text for g in goals}) >= 995
    connectors = ("that is", "that's", "which is", " with ", "; it must", "featuring", "make sure", "has to be")
    assert all(sum(c in g.instruction_text for g in goals) >= 10 for c in connectors)
    for goal in goals:
        for value in goal.goal_options.values():
            assert value in goal.instruction_text
        for attribute in goal.attributes:
            assert attribute in goal.instruction_text


def test_goal_order_and_splits_follow_the_original(default_catalog):
    goals = default_catalog.goals()
    ordered = unshuffle_goals(goals)
    assert shuffle_goals(ordered) == goals
    targets = [default_catalog.index_of(g.asin) for g in ordered]
    assert targets == sorted(targets)  # listed in product order before the shuffle
    state = random.getstate()
    try:  # the original: random.seed(233); random.shuffle(goals)
        expected = list(range(len(goals)))
        random.seed(233)
        random.shuffle(expected)
    finally:
        random.setstate(state)
    assert shuffle_goals(list(range(len(goals)))) == expected
    test, dev, train = goals[:TEST_GOALS], goals[TEST_GOALS : TEST_GOALS + DEV_GOALS], goals[TEST_GOALS + DEV_GOALS :]
    assert (len(test), len(dev), len(train)) == (500, 1000, DEFAULT_NUM_GOALS - 1500)


def test_small_catalogs_have_several_goals_per_product():
    catalog = GeneratedCatalog(200, seed=1, num_goals=600)
    goals = catalog.goals()
    assert len(goals) == 600
    assert collections.Counter(g.asin for g in goals).most_common(1)[0][1] == 3
    assert len({g.instruction_text for g in goals}) > 590
    assert GeneratedCatalog(200, seed=1, num_goals=600).goals() == goals


# ---- the original format ---------------------------------------------------------------------


def test_export_then_load_gives_the_same_catalog_and_goals(tmp_path: Path):
    generated = GeneratedCatalog(2000, seed=11, num_goals=1700)
    paths = export_original(generated, tmp_path)
    assert {p.name for p in paths.values()} == {
        "items_shuffle.json",
        "items_ins_v2.json",
        "items_human_ins.json",
        "reviews.json",
    }
    loaded = load_catalog(tmp_path)
    assert isinstance(loaded, OriginalCatalog) and len(loaded) == 2000
    assert load_catalog(str(tmp_path)) is loaded
    for index in range(2000):
        assert loaded.product(index) == generated.product(index)
        assert loaded.index_of(generated.asin(index)) == index
    assert [loaded.search_text(i) for i in range(0, 2000, 50)] == [generated.search_text(i) for i in range(0, 2000, 50)]
    assert loaded.goals() == generated.goals()  # texts, attributes, options, caps, in the same split order

    # The files are what the original's loader expects.
    raw = json.loads(paths["products"].read_text())
    assert raw[0]["pricing"].startswith("$") and raw[0]["images"] == [""]
    human = json.loads(paths["human"].read_text())
    first = next(iter(human.values()))[0]
    assert {"instruction", "instruction_attributes", "instruction_options"} <= set(first)
    assert not first["instruction"].endswith("dollars")
    attributes = json.loads(paths["attributes"].read_text())
    assert len(attributes) == 2000 and sum("instruction" in entry for entry in attributes.values()) == len(human)

    # Some goals only: the first N of the split order, by target, reshuffled on loading.
    export_original(generated, tmp_path / "some", num_goals=40)
    some = OriginalCatalog(tmp_path / "some")
    assert sorted(g.instruction_text for g in some.goals()) == sorted(
        g.instruction_text for g in generated.goals()[:40]
    )


def _write(folder: Path, name: str, content) -> Path:
    path = folder / name
    path.write_text(json.dumps(content))
    return path


def _original_item(asin: str, pricing, options=None, bullets=("Soft.",), name="Item") -> dict:
    return {
        "asin": asin,
        "name": name,
        "category": "fashion",
        "query": " Men's Shoes ",
        "product_category": "Clothing › Men › Shoes",
        "full_description": "A shoe.",
        "small_description": list(bullets) if isinstance(bullets, tuple) else bullets,
        "pricing": pricing,
        "customization_options": options,
        "images": ["x.jpg"],
        "brand": "dropped",
    }


@pytest.fixture
def original_folder(tmp_path: Path) -> Path:
    items = [
        _original_item(
            "B0SHOE0001",
            "$12.99 to $20.00",
            {"Color": [{"value": "Black/White", "image": "a.jpg"}, {"value": " Navy "}], "Size": [{"value": "9.5"}]},
            name="Running Shoe",
        ),
        _original_item("nan", "$1.00"),
        _original_item("B0TOOLONG123", "$1.00"),
        _original_item("B0SHOE0002", "$1,299.00", {"style": None}, bullets="One bullet"),
        _original_item("B0SHOE0001", "$5.00", name="Duplicate"),
        _original_item("B0SHOE0003", None),
        _original_item("B0SHOE0004", "$33.10 - $40.00 - $50.00"),
    ]
    _write(tmp_path, "items_shuffle_1000.json", items)
    _write(
        tmp_path,
        "items_ins_v2_1000.json",
        {
            "B0SHOE0001": {"attributes": ["rubber sole", "lace up"], "instruction": "x", "instruction_attributes": []},
            "B0SHOE0002": {"instruction": "no attributes here"},
        },
    )
    _write(
        tmp_path,
        "reviews.json",
        [
            {
                "asin": "B0SHOE0001",
                "reviews": [{"title": "Good", "stars": "4.0", "review": "Nice shoe"}],
                "average_rating": 4,
            },
            {"asin": "B0SHOE0003", "reviews": [{"title": "Meh", "score": 2}], "average_rating": "2.0"},
        ],
    )
    _write(
        tmp_path,
        "items_human_ins.json",
        {
            "B0SHOE0001": [
                {
                    "instruction": "i need black and white running shoes in size 9.5.",
                    "instruction_attributes": ["rubber sole"],
                    "instruction_options": ["black | white", "9.5"],
                    "options": ["size: 9.5"],
                },
                {"instruction": "skipped: no attributes", "instruction_attributes": [], "instruction_options": []},
                {
                    "instruction": "Two colors please",
                    "instruction_attributes": ["lace up"],
                    "instruction_options": ["navy", "black | white"],
                },
            ],
            "B0SHOE0003": [
                {"instruction": "a plain shoe", "instruction_attributes": ["cheap"], "instruction_options": []}
            ],
            "B0SHOE0004": [
                {"instruction": ".ranged.", "instruction_attributes": ["a"], "instruction_options": ["red"]}
            ],
            "B0NOTINCAT": [
                {"instruction": "absent product", "instruction_attributes": ["a"], "instruction_options": []}
            ],
        },
    )
    return tmp_path


def test_original_files_are_cleaned_as_the_original_does(original_folder: Path):
    catalog = OriginalCatalog(original_folder)
    assert len(catalog) == 4  # "nan", a too long ASIN and a repeated one are skipped
    shoe, pricey, plain, ranged = (catalog.product(i) for i in range(4))
    assert shoe.asin == "B0SHOE0001" and shoe.title == "Running Shoe" and shoe.query == "men's shoes"
    assert shoe.pricing == (12.99, 20.0) and shoe.price == 12.99
    assert shoe.options == {"color": ("black | white", "navy"), "size": ("9.5",)}
    assert shoe.attributes == ("rubber sole", "lace up")
    assert shoe.reviews[0].score == 4 and shoe.reviews[0].body == "Nice shoe" and shoe.rating == 4.0
    assert pricey.pricing == (1299.0,) and pricey.options == {} and pricey.bullet_points == ("One bullet",)
    assert pricey.attributes == ("DUMMY_ATTR",)
    assert plain.pricing == (100.0,) and plain.reviews[0].body == "" and plain.rating == 2.0
    assert ranged.pricing == (33.1, 40.0)
    assert catalog.index_of("B0SHOE0004") == 3 and catalog.index_of("b0shoe0004") == 3
    with pytest.raises(KeyError):
        catalog.index_of("B0SHOE0009")
    assert OriginalCatalog(original_folder, num_products=2).num_products == 1  # the first 2 rows, before cleaning


def test_original_goals_draw_prices_and_caps_like_the_original(original_folder: Path):
    catalog = OriginalCatalog(original_folder, price_seed=5)
    goals = catalog.goals()
    assert len(goals) == 4  # the goal without attributes and the absent product's are dropped
    # The original with random.seed(5) before load_products: one uniform draw per price range in
    # product order, then per goal in order two of the first four multiples of 10 above the price.
    rng = random.Random(5)
    drawn = {"B0SHOE0001": rng.uniform(12.99, 20.0), "B0SHOE0004": rng.uniform(33.1, 40.0)}
    assert catalog.drawn_price(0) == drawn["B0SHOE0001"] and catalog.drawn_price(2) == 100.0
    expected = []
    for asin, price in (("B0SHOE0001", drawn["B0SHOE0001"]),) * 2 + (("B0SHOE0003", 100.0), ("B0SHOE0004", None)):
        price = drawn["B0SHOE0004"] if price is None else price
        expected.append((asin, sorted(rng.sample([p for p in PRICE_RANGE if p > price][:4], 2))[1]))
    ordered = unshuffle_goals(goals)
    assert [(g.asin, g.price_upper) for g in ordered] == expected
    first, second, third, fourth = ordered
    assert first.instruction_text == (
        f"i need black and white running shoes in size 9.5, and price lower than {first.price_upper:.2f} dollars"
    )
    assert first.goal_options == {"color": "black | white", "size": "9.5"}  # "options" names, else the product's
    assert second.goal_options == {"color": "navy", "color (2)": "black | white"}
    assert fourth.goal_options == {"option 1": "red"} and fourth.instruction_text.startswith("ranged, and price")
    assert third.name == "Item" and third.query == "men's shoes"
    assert OriginalCatalog(original_folder, price_seed=5).goals() == goals


def test_original_folder_prefers_the_full_files(original_folder: Path):
    _write(original_folder, "items_shuffle.json", [_original_item("B0FULL0001", "$3.00")])
    _write(original_folder, "items_ins_v2.json", {"B0FULL0001": {"attributes": ["full"]}})
    full = OriginalCatalog(original_folder)
    assert len(full) == 1 and full.product(0).attributes == ("full",)
    small = OriginalCatalog(original_folder / "items_shuffle_1000.json")
    assert len(small) == 4 and small.product(0).attributes == ("rubber sole", "lace up")
    explicit = OriginalCatalog(products_file=original_folder / "items_shuffle_1000.json")
    assert len(explicit) == 4
    assert full.name != small.name
    with pytest.raises(FileNotFoundError):
        OriginalCatalog(original_folder / "missing")


def test_iter_json_reads_big_files_piecewise(tmp_path: Path, monkeypatch):
    data = [{"a": [1, 2.5, None, True], "b": "x" * 30, "c": {"d": "ü…"}}, 12345678, -0.5e3, "s", [], {}, False]
    pairs = {"k1": 10, "k2": [{"z": 1}], "k3": "v", "k4": 1234567890123}
    list_path = tmp_path / "list.json"
    object_path = tmp_path / "object.json"
    list_path.write_text(json.dumps(data, indent=3))
    object_path.write_text(json.dumps(pairs))
    for chunk in (1, 3, 7, 4096):
        monkeypatch.setattr(original, "_READ_CHUNK", chunk)
        assert list(iter_json(list_path)) == data
        assert dict(iter_json(object_path)) == pairs
    (tmp_path / "empty.json").write_text(" [ ] ")
    assert list(iter_json(tmp_path / "empty.json")) == []
    (tmp_path / "bad.json").write_text('[{"a": 1} {"b": 2}]')
    with pytest.raises(ValueError):
        list(iter_json(tmp_path / "bad.json"))


def test_load_catalog_sources(tmp_path: Path):
    default = load_catalog(None)
    assert isinstance(default, GeneratedCatalog) and (len(default), default.seed) == (20_000, 0)
    assert load_catalog("generated") is default
    assert load_catalog(None, num_products=500).num_products == 500
    custom = load_catalog("generated:1k:3")
    assert (custom.num_products, custom.seed) == (1000, 3) and custom.name == "generated-1000-seed3"
    assert load_catalog("generated:1_000:3") is custom
    assert load_catalog("generated:1m").num_products == 1_000_000
    for bad in ("generated:abc", "generated:1:2:3", "generated:0"):
        with pytest.raises(ValueError):
            load_catalog(bad)
    with pytest.raises(FileNotFoundError):
        load_catalog(tmp_path / "nothing-here")
