"""WebShop's reward against the original ``get_reward`` (princeton-nlp/WebShop, web_agent_site/engine/goal.py).

``original_get_reward`` below is a re-implementation of the original written from its
source for this test, on the original's data shapes (product and goal dicts with the
original's keys, goal options as a list of values as the human goals hold them), with
thefuzz 0.19.0's ``token_set_ratio`` (the version the original pins, without
python-Levenshtein, so difflib) re-implemented from thefuzz's source in the original's
steps. The side-by-side tests compare it with ``reward.get_reward`` on thousands of
generated purchases: the target and other products of the goal's query results, bought
with the goal's options, some of them, other values of the same option, values of other
products, and prices around the cap.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import spacy

from agentgym.environments.webshop.catalog import GeneratedCatalog
from agentgym.environments.webshop.data import Goal, Product
from agentgym.environments.webshop.engine import load_shop
from agentgym.environments.webshop.reward import RULES, SpacyNounTagger, get_reward, noun_tagger, title_nouns

# ---- the original, re-implemented ------------------------------------------------------------

_COLORS = (  # noqa: SIM905 (a word list reads best as words)
    "alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze brown burgundy "
    "camel camo caramel champagne charcoal cheetah chestnut chocolate christmas coffee cognac copper coral "
    "cranberry cream crystal dark denim eggplant elephant espresso fuchsia gold granite grape graphite grass "
    "gray green grey heather indigo ivory ivy khaki lavender lemon leopard light lilac lime magenta maroon "
    "mauve merlot midnight mint mocha multicolor mushroom mustard natural navy nude olive orange peach pewter "
    "pink plum purple rainbow red rose royal rust sand sapphire seashell silver skull slate steel stone "
    "stonewash sunflower tan taupe teal tiger turquoise violet walnut wheat white wine yellow"
).split()


def ref_normalize_color(text: str) -> str:
    for color in _COLORS:
        if color in text:
            return color
    return text


def ref_ratio(s1: str, s2: str) -> int:
    """thefuzz 0.19 ``fuzz.ratio`` (decorators: None -> 0, equal -> 100, empty -> 0)."""
    if s1 == s2:
        return 100
    if len(s1) == 0 or len(s2) == 0:
        return 0
    return int(round(100 * difflib.SequenceMatcher(None, s1, s2).ratio()))


def ref_full_process(s: str) -> str:
    """thefuzz 0.19 ``utils.full_process(s, force_ascii=True)``."""
    s = "".join(ch for ch in s if not 128 <= ord(ch) < 256)
    return re.sub(r"(?ui)\W", " ", s).lower().strip()


def ref_token_set_ratio(s1: str, s2: str) -> int:
    p1, p2 = ref_full_process(s1), ref_full_process(s2)
    if len(p1) == 0 or len(p2) == 0:
        return 0
    tokens1, tokens2 = set(p1.split()), set(p2.split())
    sect = " ".join(sorted(tokens1 & tokens2))
    combined_1to2 = (sect + " " + " ".join(sorted(tokens1 - tokens2))).strip()
    combined_2to1 = (sect + " " + " ".join(sorted(tokens2 - tokens1))).strip()
    sect = sect.strip()
    return max(ref_ratio(sect, combined_1to2), ref_ratio(sect, combined_2to1), ref_ratio(combined_1to2, combined_2to1))


def original_get_reward(
    purchased: dict[str, Any], goal: dict[str, Any], price: float, options: dict[str, str], nouns: Callable
) -> tuple[float, dict[str, Any]]:
    """The original ``get_reward(..., verbose=True)``; ``nouns(title)`` stands for
    ``[t.text.lower() for t in nlp(title) if t.pos_ in ('PNOUN', 'NOUN', 'PROPN')]``."""
    # get_type_reward
    query_match = purchased["query"] == goal["query"]
    p_cat = [x.strip() for x in purchased["product_category"].split("›")]
    g_cat = [x.strip() for x in goal["product_category"].split("›")]
    category_match = len(set(p_cat) & set(g_cat)) >= 2
    p_nouns, g_nouns = nouns(purchased["name"]), nouns(goal["name"])
    title_score = 0.2 if len(g_nouns) == 0 else len(set(p_nouns) & set(g_nouns)) / len(g_nouns)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    # get_attribute_reward
    num_attr = 0
    for g_attr in goal["attributes"]:
        matched = False
        for p_attr in purchased["Attributes"]:
            if ref_token_set_ratio(p_attr, g_attr) > 85:
                num_attr += 1
                matched = True
                break
        if not matched and (
            g_attr in purchased["Title"].lower()
            or g_attr in " ".join(purchased["BulletPoints"]).lower()
            or g_attr in purchased["Description"].lower()
        ):
            num_attr += 1
    # get_option_reward
    p_opts = [ref_normalize_color(o) for o in options.values()]
    g_opts = [ref_normalize_color(o) for o in goal["goal_options"]]
    num_opt = 0
    for g_option in g_opts:
        for p_option in p_opts:
            if ref_token_set_ratio(p_option, g_option) > 85:
                num_opt += 1
                break
    r_price = price <= goal["price_upper"]
    denominator = len(goal["attributes"]) + len(goal["goal_options"]) + 1
    total = (num_attr + num_opt + r_price) / denominator * r_type
    info = {
        "r_type": r_type,
        "query_match": query_match,
        "category_match": category_match,
        "title_score": title_score,
        "r_att": num_attr / len(goal["attributes"]),
        "r_option": num_opt / len(g_opts) if g_opts else None,
        "r_price": r_price,
    }
    return total, info


def as_original(product: Product) -> dict[str, Any]:
    """A product in the original's dict shape (``engine.load_products``)."""
    return {
        "query": product.query,
        "product_category": product.product_category,
        "name": product.title,
        "Title": product.title,
        "Attributes": list(product.attributes),
        "BulletPoints": list(product.bullet_points),
        "Description": product.description,
    }


def goal_as_original(goal: Goal) -> dict[str, Any]:
    return {
        "query": goal.query,
        "product_category": goal.product_category,
        "name": goal.name,
        "attributes": list(goal.attributes),
        "goal_options": list(goal.goal_options.values()),  # a human goal's instruction_options
        "price_upper": goal.price_upper,
    }


# ---- generated purchases -----------------------------------------------------------------------


def purchases(count: int, seed: int, tmp_path: Path) -> list[tuple[Product, Goal, float, dict[str, str]]]:
    """``count`` purchases on a generated catalog (see the module docstring)."""
    catalog = GeneratedCatalog(1500, seed=seed, num_goals=400)
    shop = load_shop(catalog, cache_dir=tmp_path)
    rng = random.Random(seed)
    every_value = sorted({v for i in range(300) for vs in catalog.product(i).options.values() for v in vs})
    made = []
    while len(made) < count:
        goal = rng.choice(shop.goals)
        target = catalog.index_of(goal.asin)
        found = list(shop.search(goal.query)) + list(shop.search(goal.instruction_text))
        for index in [target, *rng.sample(found, min(3, len(found)))]:
            product = shop.product(index)
            options: dict[str, str] = {}
            for name, values in product.options.items():
                roll = rng.random()
                if name in goal.goal_options and roll < 0.5:
                    options[name] = goal.goal_options[name]  # what the goal asks (maybe not offered here)
                elif roll < 0.8:
                    options[name] = rng.choice(values)  # another value of the option
                elif roll < 0.9:
                    options[name] = rng.choice(every_value)  # a value of another product
            if rng.random() < 0.1:
                options[rng.choice(["color", "size", "style", "pack"])] = rng.choice(every_value)
            price = rng.choice([product.price, catalog.drawn_price(index), goal.price_upper, goal.price_upper + 0.01])
            made.append((product, goal, price, options))
    return made[:count]


def assert_same(product: Product, goal: Goal, price: float, options: dict[str, str], tagger, nouns) -> None:
    reward, ours = get_reward(product, goal, price, options, tagger)
    expected, theirs = original_get_reward(as_original(product), goal_as_original(goal), price, options, nouns)
    context = (product.title, goal.name, goal.attributes, goal.goal_options, options, price)
    assert reward == expected, context  # exact, not approximate
    for key, value in theirs.items():
        assert ours[key] == value, (key, context)
    assert 0.0 <= reward <= 1.0


def test_side_by_side_with_the_original_rules_tagger(tmp_path: Path) -> None:
    made = purchases(5200, seed=3, tmp_path=tmp_path)
    for product, goal, price, options in made:
        assert_same(product, goal, price, options, RULES, lambda title: list(title_nouns(title)))
    # The sample covers what the formula distinguishes.
    rewards = [get_reward(p, g, c, o, RULES)[1] for p, g, c, o in made]
    assert {b["r_type"] for b in rewards} >= {0.0, 0.1, 0.5, 1.0}
    assert any(0 < (b["r_option"] or 0) < 1 for b in rewards) and any(b["r_option"] == 1.0 for b in rewards)
    assert any(b["r_price"] is False for b in rewards) and any(0 < b["r_att"] < 1 for b in rewards)


# ---- hand-computed cases -------------------------------------------------------------------------

RICE_PATH = "Grocery & Gourmet Food › Pantry Staples › Rice"


def rice(title: str, options: dict[str, tuple[str, ...]], description: str = "") -> Product:
    return Product(
        asin="B000000001",
        title=title,
        category="food",
        product_category=RICE_PATH,
        query="rice",
        pricing=(9.99,),
        options=options,
        attributes=("gluten free",),
        bullet_points=("Grown in Italy",),
        description=description,
    )


def rice_goal(goal_options: dict[str, str], name: str = "Riso Gallo Arborio Rice") -> Goal:
    return Goal(
        asin="B000000002",
        instruction_text="i need gluten free rice",
        attributes=("gluten free",),
        goal_options=goal_options,
        price_upper=20.0,
        category="food",
        query="rice",
        name=name,
        product_category=RICE_PATH,
    )


def test_size_34_inch_bought_32_inch_matches() -> None:
    # Tokens {32, inch} / {34, inch}: ratio("inch 32", "inch 34") = 2 * 6 / 14 = 85.7 -> 86 > 85.
    product = rice("Acme Rice Bag", {"size": ("32 inch", "34 inch")})
    reward, info = get_reward(product, rice_goal({"size": "34 inch"}), 9.99, {"size": "32 inch"}, RULES)
    assert info["r_option"] == 1.0 and info["option_matches"] == 1
    assert reward == 1.0  # (1 attribute + 1 option + price) / 3


def test_style_arborio_bought_jasmine_elsewhere_does_not_match() -> None:
    # Another rice in style "jasmine", whose title says "jasmine": no fallback to the product text for options.
    product = rice("Lumen Jasmine Rice", {"style": ("jasmine", "basmati")}, description="Fragrant jasmine rice.")
    reward, info = get_reward(product, rice_goal({"style": "arborio"}), 9.99, {"style": "jasmine"}, RULES)
    assert info["option_matches"] == 0 and info["r_option"] == 0.0
    assert info["r_type"] == 1.0 and reward == pytest.approx(2 / 3)  # (1 attribute + 0 options + price) / 3
    assert round(reward, 3) == 0.667


def test_the_option_count_never_exceeds_the_goal_options() -> None:
    product = rice("Acme Arborio Rice", {"style": ("arborio",), "size": ("2 lb",)})
    # Two purchased values both match the one goal value: still one match.
    reward, info = get_reward(
        product, rice_goal({"style": "arborio"}), 9.99, {"style": "arborio", "x": "arborio"}, RULES
    )
    assert info["option_matches"] == 1 and reward == 1.0


# ---- the spaCy path ------------------------------------------------------------------------------


def tagging_pipeline(nouns: list[str], others: list[str], path: Path) -> Path:
    """A spaCy pipeline without a trained model: a blank English tokenizer plus an
    AttributeRuler that tags ``nouns`` NOUN and ``others`` ADJ, saved to ``path``."""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("attribute_ruler")
    ruler.add([[{"LOWER": {"IN": nouns}}]], {"POS": "NOUN"})
    ruler.add([[{"LOWER": {"IN": others}}]], {"POS": "ADJ"})
    nlp.to_disk(path)
    return path


def test_spacy_noun_tags_feed_the_title_score(tmp_path: Path) -> None:
    goal = rice_goal({}, name="Acme Rice Cooker")
    product = rice("Lumen Rice Steamer", {})
    # "rice" tagged NOUN: the goal's nouns are [rice, cooker], one shared.
    as_noun = noun_tagger(tagging_pipeline(["rice", "cooker", "steamer"], [], tmp_path / "noun"))
    assert isinstance(as_noun, SpacyNounTagger) and as_noun.nouns("Acme Rice Cooker") == ("rice", "cooker")
    _, info = get_reward(product, goal, 9.99, {}, as_noun)
    assert info["title_score"] == 0.5 and info["r_type"] == 1.0
    assert info["noun_tagger"].startswith("spacy:")
    # The same word tagged ADJ: the goal's only noun is "cooker", none shared -> r_type 0.
    as_adjective = noun_tagger(tagging_pipeline(["cooker", "steamer"], ["rice"], tmp_path / "adj"))
    reward, info = get_reward(product, goal, 9.99, {}, as_adjective)
    assert info["title_score"] == 0.0 and info["r_type"] == 0.0 and reward == 0.0
    # The rules tag "rice" a noun too, and say so.
    assert get_reward(product, goal, 9.99, {}, RULES)[1]["noun_tagger"] == "rules"


def test_side_by_side_with_the_original_spacy_tagger(tmp_path: Path) -> None:
    nouns = ["shampoo", "rice", "shoes", "mug", "bottle", "cable", "charger", "hair", "tea", "coffee", "case"]
    path = tagging_pipeline(nouns, ["free", "black", "organic"], tmp_path / "pipe")
    tagger = noun_tagger(path)
    nlp = spacy.load(path)

    def original_nouns(title: str) -> list[str]:
        return [t.text.lower() for t in nlp(title) if t.pos_ in ("PNOUN", "NOUN", "PROPN")]

    for product, goal, price, options in purchases(1000, seed=5, tmp_path=tmp_path):
        assert_same(product, goal, price, options, tagger, original_nouns)


def test_auto_picks_spacy_when_installed_else_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBSHOP_SPACY_MODEL", "no_such_spacy_pipeline_xyz")
    assert noun_tagger("auto") is RULES and noun_tagger("rules") is RULES
    path = tagging_pipeline(["rice"], [], tmp_path / "auto")
    monkeypatch.setenv("WEBSHOP_SPACY_MODEL", str(path))
    assert isinstance(noun_tagger("auto"), SpacyNounTagger)
    with pytest.raises(OSError):
        noun_tagger("no_such_spacy_pipeline_xyz")  # named explicitly: an error, not a silent fallback
    with pytest.raises(TypeError):
        noun_tagger(42)  # type: ignore[arg-type]


def test_env_reports_tagger_and_price_mode(tmp_path: Path) -> None:
    from agentgym.environments.webshop.env import WebShopEnv

    catalog = GeneratedCatalog(600, seed=1, num_goals=120)
    path = tagging_pipeline(["rice"], [], tmp_path / "env")
    for kwargs, tagger_name in (({}, "rules"), ({"noun_tagger": str(path), "price": "drawn"}, "spacy:")):
        env = WebShopEnv(catalog=catalog, cache_dir=tmp_path, **kwargs)
        env.reset(options={"task_id": 0})
        terminated, info = False, {}
        while not terminated:
            _, _, terminated, _, info = env.step(env.oracle_action())
        breakdown = info["reward_breakdown"]
        assert breakdown["noun_tagger"].startswith(tagger_name)
        assert breakdown["price_mode"] == kwargs.get("price", "low")
        goal = env.shop.goals[info["goal_index"]]
        index = catalog.index_of(goal.asin)
        expected = catalog.drawn_price(index) if kwargs.get("price") == "drawn" else catalog.product(index).price
        assert info["purchase"]["price"] == breakdown["price"] == expected
    with pytest.raises(ValueError, match="price"):
        WebShopEnv(catalog=catalog, cache_dir=tmp_path, price="high")


def test_drawn_price_is_seeded_and_in_the_range() -> None:
    catalog = GeneratedCatalog(400, seed=2)
    ranged = [i for i in range(400) if len(catalog.product(i).pricing) == 2]
    assert ranged
    for i in ranged:
        low, high = catalog.product(i).pricing
        assert low <= catalog.drawn_price(i) <= high
        assert catalog.drawn_price(i) == GeneratedCatalog(400, seed=2).drawn_price(i)
    single = next(i for i in range(400) if len(catalog.product(i).pricing) == 1)
    assert catalog.drawn_price(single) == catalog.product(single).price
