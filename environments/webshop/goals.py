"""Shopping goals: generated from target products, price caps and splits as the original WebShop.

A generated goal (:func:`make_goal`) asks for its target product's type with 1-3 of the
target's attributes, one value of some of its options (each option with probability 0.75;
one goal in ten asks for no option at all) and a price cap, in one of many phrasings:
30-odd openers ("i'm looking for", "find me", "my wife needs", "for long work days, i
need" ...), a dozen ways to attach the attributes (as adjectives, "that is ...", "with
...", "; it must be ...", "featuring ...") and several per option ("in navy blue", "in the
color navy blue", "size 9.5", "in chocolate chip flavor", "with size: 9.5, and color:
black" as the original's synthetic goals write). Every goal is satisfiable by its target:
the target lists each goal attribute, offers each goal option value and costs at most the
cap.

Price cap (the original's ``get_human_goals``): the multiples of 10 from 10 to 990 that
are above the price, the first four of them; if there are at least two, two are sampled
and the larger is the cap, and the instruction ends with ``", and price lower than
{cap:.2f} dollars"``; otherwise the cap is 1,000,000 and nothing is appended. The text
before it has no leading or trailing full stop, as the original's ``strip('.')`` leaves.

Order and splits (the original's ``SimServer``): goals are listed target by target in
product order, then shuffled with ``random.Random(233).shuffle``, which draws exactly what
the original's ``random.seed(233); random.shuffle(goals)`` draws; test = the first 500,
dev = the next 1,000, train = the rest (the engine maps these onto agentgym's task ids).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentgym.environments.webshop.data import Goal, Product
from agentgym.environments.webshop.vocabulary import ProductType, product_type

if TYPE_CHECKING:
    from agentgym.environments.webshop.catalog import GeneratedCatalog

#: The original's ``PRICE_RANGE``: caps are drawn from these.
PRICE_RANGE = tuple(10.0 * i for i in range(1, 100))
NO_PRICE_CAP = 1_000_000.0
GOAL_SHUFFLE_SEED = 233
TEST_GOALS = 500
DEV_GOALS = 1_000
#: Goals of a generated catalog by default: as many as the original's human instructions.
DEFAULT_NUM_GOALS = 12_087


# ---- price caps and splits (as the original) -------------------------------------------------


def price_cap(price: float, rng: random.Random) -> float:
    """The original's cap: the larger of two of the first four multiples of 10 above ``price``."""
    candidates = [p for p in PRICE_RANGE if p > price][:4]
    if len(candidates) < 2:
        return NO_PRICE_CAP
    return max(rng.sample(candidates, 2))


def price_text(cap: float) -> str:
    """What the original appends to an instruction for a cap (nothing when there is none)."""
    return f", and price lower than {cap:.2f} dollars" if cap < NO_PRICE_CAP else ""


def shuffle_goals(goals: Sequence[Goal]) -> list[Goal]:
    """Goals in split order: ``random.Random(233).shuffle``, the same permutation as the original's
    ``random.seed(233); random.shuffle(goals)``."""
    shuffled = list(goals)
    random.Random(GOAL_SHUFFLE_SEED).shuffle(shuffled)
    return shuffled


def unshuffle_goals(goals: Sequence[Goal]) -> list[Goal]:
    """The inverse of :func:`shuffle_goals`: goals back in their original (product) order."""
    order = list(range(len(goals)))
    random.Random(GOAL_SHUFFLE_SEED).shuffle(order)
    original: list[Goal | None] = [None] * len(goals)
    for position, source in enumerate(order):
        original[source] = goals[position]
    return original  # type: ignore[return-value]


# ---- phrasing ----------------------------------------------------------------------------------

OPENERS = (
    "i'm looking for",
    "i am looking for",
    "i need",
    "i want",
    "i would like",
    "i'd like",
    "find me",
    "get me",
    "can you find me",
    "could you find me",
    "please find me",
    "please get me",
    "help me find",
    "i'm searching for",
    "search for",
    "show me",
    "buy me",
    "i want to buy",
    "i need to buy",
    "i'm shopping for",
    "looking for",
    "i'm trying to find",
    "i wish to buy",
    "pick out",
    "i'm in the market for",
    "can you get me",
    "locate",
    "i'm hunting for",
    "i need you to find",
    "order me",
    "i want to get",
    "i am trying to find",
    "i'd like to order",
    "could you order",
    "i have to get",
    "we need",
)
_PEOPLE = (
    "my wife",
    "my husband",
    "my daughter",
    "my son",
    "my mom",
    "my dad",
    "my sister",
    "my brother",
    "my roommate",
    "my friend",
    "my partner",
    "my boss",
)
_PERSON_VERBS = ("needs", "wants", "asked me for", "is looking for", "would love")
_OPTION_FORMS = {
    "color": ("in {v}", "in {v} color", "in the color {v}", "in a {v} color", "color {v}", "colored {v}"),
    "size": ("in size {v}", "size {v}", "in a size {v}", "in {v} size", "in the {v} size", "sized {v}"),
    "flavor name": ("in {v} flavor", "with {v} flavor", "in the {v} flavor", "flavor {v}", "{v} flavored"),
    "scent": ("in {v} scent", "with a {v} scent", "scent {v}", "in the {v} scent"),
    "capacity": ("with {v} capacity", "in {v}", "{v} capacity", "in the {v} version"),
    "style": ("in {v} style", "in the {v} style", "style {v}", "in the {v} option", "the {v} one"),
}
_OTHER_OPTION_FORMS = ("{name} {v}", "with {name} {v}", "in {v}")
_ATTRIBUTE_COUNTS = (1, 1, 1, 2, 2, 2, 2, 3, 3, 3)


def _join(items: Sequence[str], rng: random.Random, word: str = "and") -> str:
    if len(items) == 1:
        return items[0]
    comma = "," if len(items) > 2 and rng.random() < 0.4 else ""
    return f"{', '.join(items[:-1])}{comma} {word} {items[-1]}"


def _article(text: str) -> str:
    lower = text.lower()
    if lower.startswith(("hdmi", "hd ", "hour", "honest")):
        return "an"
    if lower.startswith(("uni", "usb", "use", "one", "eu", "ur")):
        return "a"
    return "an" if lower[:1] in "aeiou" else "a"


def _noun_phrase(determiner: str, noun: str, adjectives: str = "") -> str:
    body = f"{adjectives} {noun}" if adjectives else noun
    if determiner in ("a", "an"):
        return f"{_article(body)} {body}"
    return f"{determiner} {body}" if determiner else body


def _option_phrases(options: dict[str, str], rng: random.Random) -> str:
    """The goal's options as words, starting without a space; empty when there are none."""
    if not options:
        return ""
    if rng.random() < 0.1:  # the original's synthetic format
        return "with " + ", and ".join(f"{name}: {value}" for name, value in options.items())
    phrases = []
    for name, value in options.items():
        forms = _OPTION_FORMS.get(name, _OTHER_OPTION_FORMS)
        phrases.append(rng.choice(forms).format(v=value, name=name))
    return _join(phrases, rng) if rng.random() < 0.6 else ", ".join(phrases)


def render_instruction(
    kind: ProductType, attributes: Sequence[str], options: dict[str, str], rng: random.Random
) -> str:
    """A natural instruction for a product of ``kind`` with ``attributes`` and ``options``.

    Lower case; no leading or trailing full stop; no price text (see :func:`price_text`).
    """
    determiner, noun = rng.choice(kind.goal_nouns)
    attrs = _join(list(attributes), rng)
    opts = _option_phrases(options, rng)
    tail = f" {opts}" if opts else ""
    plain = _noun_phrase(determiner, noun)
    use = rng.choice(kind.uses)
    last_word = noun.rsplit(" ", 1)[-1]
    plural = determiner not in ("a", "an") and last_word.endswith("s") and not last_word.endswith("ss")
    it, is_, that_is = ("they", "are", "that are") if plural else ("it", "is", "that is")
    style = rng.randrange(14)
    if style == 0:
        adjectives = " ".join(attributes) if rng.random() < 0.5 else ", ".join(attributes)
        core = _noun_phrase(determiner, noun, adjectives) + tail
    elif style == 1:
        core = f"{plain} {that_is} {attrs}{tail}"
    elif style == 2:
        thats = "that are" if plural else "that's"
        core = f"{plain} {thats} {attrs}{tail}"
    elif style == 3:
        core = f"{plain} which {is_} {attrs}{',' if opts else ''}{tail}"
    elif style == 4:
        core = f"{plain} with {attrs}{tail}"
    elif style == 5 and opts:
        core = f"{plain} {opts} {that_is} {attrs}"
    elif style == 6:
        core = f"{plain}, {attrs}{',' if opts else ''}{tail}"
    elif style == 7:
        core = f"{plain}. {it} should be {attrs}" + (f". i want {'them' if plural else 'it'} {opts}" if opts else "")
    elif style == 8:
        core = f"{plain}; {it} must be {attrs}{tail}"
    elif style == 9:
        core = f"{plain} and {it} {'have' if plural else 'has'} to be {attrs}" + (f", {opts}" if opts else "")
    elif style == 10:
        core = f"{plain} featuring {attrs}{tail}"
    elif style == 11:
        comes = "come" if plural else "comes"
        core = f"{plain}. make sure {it} {is_} {attrs}" + (f" and {comes} {opts}" if opts else "")
    elif style == 12:
        core = f"{plain} for {use} {that_is} {attrs}{tail}"
    else:
        core = f"{_noun_phrase(determiner, noun, attributes[0])}" + (
            f" {that_is} also {_join(list(attributes[1:]), rng)}" if len(attributes) > 1 else ""
        )
        core += f", {opts}" if opts else ""
    frame = rng.random()
    if frame < 0.1:
        text = f"{rng.choice(_PEOPLE)} {rng.choice(_PERSON_VERBS)} {core}"
    elif frame < 0.18:
        text = f"for {use}, {rng.choice(OPENERS)} {core}"
    else:
        text = f"{rng.choice(OPENERS)} {core}"
    return text.lower().strip(" .")


def synthetic_instruction(kind: ProductType, attributes: Sequence[str]) -> str:
    """A plain, option-free instruction (what the original's ``items_ins_v2`` files hold)."""
    determiner, noun = kind.goal_nouns[0]
    last_word = noun.rsplit(" ", 1)[-1]
    plural = determiner not in ("a", "an") and last_word.endswith("s") and not last_word.endswith("ss")
    verb = "that are" if plural else "that is"
    return f"i am looking for {_noun_phrase(determiner, noun)} {verb} {' and '.join(attributes)}".lower()


# ---- goals of a generated catalog --------------------------------------------------------------


def make_goal(product: Product, kind: ProductType, rng: random.Random) -> Goal:
    """A goal that ``product`` satisfies: 1-3 of its attributes, some of its option values, a cap."""
    count = min(rng.choice(_ATTRIBUTE_COUNTS), len(product.attributes))
    attributes = tuple(rng.sample(product.attributes, count))
    goal_options = {name: rng.choice(values) for name, values in product.options.items() if rng.random() < 0.75}
    if rng.random() < 0.1:
        goal_options = {}
    cap = price_cap(product.price, rng)
    text = render_instruction(kind, attributes, goal_options, rng) + price_text(cap)
    return Goal(
        asin=product.asin,
        instruction_text=text,
        attributes=attributes,
        goal_options=goal_options,
        price_upper=cap,
        category=product.category,
        query=product.query,
        name=product.title,
        product_category=product.product_category,
    )


def goal_targets(num_products: int, num_goals: int, seed: int) -> list[int]:
    """Target product indices in product order: distinct when the catalog is large enough,
    else every product in turn (several goals each)."""
    if num_goals <= num_products:
        return sorted(random.Random(f"webshop-targets-{seed}").sample(range(num_products), num_goals))
    return sorted(k % num_products for k in range(num_goals))


def generate_goals(catalog: GeneratedCatalog, num_goals: int | None = None) -> list[Goal]:
    """The goals of a generated catalog, in split order (see the module docstring)."""
    count = DEFAULT_NUM_GOALS if num_goals is None else num_goals
    goals = []
    previous, repeat = -1, 0
    for index in goal_targets(len(catalog), count, catalog.seed):
        repeat = repeat + 1 if index == previous else 0
        previous = index
        product = catalog.product(index)
        kind = product_type(product.query)
        assert kind is not None, product.query
        rng = random.Random(f"webshop-goal-{catalog.seed}-{index}-{repeat}")
        goals.append(make_goal(product, kind, rng))
    return shuffle_goals(goals)
