"""WebShop's purchase reward, computed as the original ``get_reward`` computes it.

``get_reward(purchased, goal, price, options)`` returns ``(reward, breakdown)``:

* **type factor** ``r_type``: the purchase's ``query`` equals the goal's (``query_match``),
  or the two category paths (``a › b › c``) share at least two levels, ignoring order
  (``category_match``), or more than 20 % of the goal title's nouns are nouns of the
  purchase's title (``title_score``). If none of the three holds, ``r_type`` = 0.5,
  else 1.0; then, whatever held, ``r_type`` = 0.1 when ``title_score`` < 0.1 and 0.0
  when ``title_score`` = 0. A goal title without nouns scores ``title_score`` = 0.2.
* **attributes**: a goal attribute matches when its fuzzy token-set ratio with one of
  the product's attributes is above 85, or else when it is a substring of the lowercased
  title, bullet points (joined by spaces) or description.
* **options**: for each *purchased* option (both sides first pass through
  :func:`normalize_color`), a ``size`` matches only when its value equals one of the goal's
  option values; any other option matches when its token-set ratio with a goal option
  value is above 85; a purchased value that did not match still counts when it is a
  substring of the lowercased title, bullet points or description.
* **price**: 1 when ``price <= goal.price_upper``.

``reward = (attribute matches + option matches + price ok) / (goal attributes + goal
options + 1) * r_type``.

Deviations from the original, all documented here:

* **Nouns** (``title_score``): the original tags titles with spaCy's ``en_core_web_lg``
  (tokens tagged NOUN or PROPN). That model cannot be downloaded here, so :func:`title_nouns`
  is a deterministic rule-based substitute: the lowercased alphabetic tokens of the title
  (split at every non-letter, so ``Women's`` gives ``women`` and ``3-Ounce`` gives
  ``ounce``), minus one-letter tokens, English function words, units and pack words
  (``oz``, ``ounce``, ``pack``, ``count`` ...), colour words, a lexicon of adjectives common
  in product titles, and words with adjective or adverb endings (``-less``, ``-ful``,
  ``-ous``, ``-able``, ``-ible``, ``-ive``, ``-ly``, and ``-ed`` in words longer than five
  letters). Brand names stay in, as spaCy tags them PROPN. spaCy's tagger depends on
  context and capitalisation, so ``title_score`` of two titles can differ from the
  original's; it is 1.0 for the target itself either way, so only purchases of *other*
  products can get another ``r_type``.
* **Score cap**: the original counts matches per *purchased* option, so selecting an option
  the goal does not ask for whose value appears in the product text can push the
  original's reward above 1. ``reward`` here is capped at 1.0 (``breakdown["uncapped"]``
  keeps the formula's value).
* **Fuzzy ratio**: the original calls ``thefuzz.fuzz.token_set_ratio``; :func:`token_set_ratio`
  does the same with rapidfuzz: strings reduced to ASCII, every non-word character
  replaced by a space, lowercased and stripped, then rapidfuzz's token-set ratio rounded
  to an integer.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from rapidfuzz import fuzz

from agentgym.environments.webshop.data import Goal, Product

#: Options compared by exact value instead of fuzzy ratio (the original's ``EXACT_MATCH_OPTS``).
EXACT_MATCH_OPTIONS = ("size",)
FUZZY_THRESHOLD = 85

#: The colour names the original ``normalize_color`` looks for, in its order: an option
#: value containing one of them (as a substring) is replaced by the first one it contains.
_COLOR_LIST = """
alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze brown
burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate christmas coffee cognac
copper coral cranberry cream crystal dark denim eggplant elephant espresso fuchsia gold granite
grape graphite grass gray green grey heather indigo ivory ivy khaki lavender lemon leopard light
lilac lime magenta maroon mauve merlot midnight mint mocha multicolor mushroom mustard natural navy
nude olive orange peach pewter pink plum purple rainbow red rose royal rust sand sapphire seashell
silver skull slate steel stone stonewash sunflower tan taupe teal tiger turquoise violet walnut
wheat white wine yellow
"""
COLOR_SET = tuple(_COLOR_LIST.split())


def normalize_color(value: str) -> str:
    """The first colour of :data:`COLOR_SET` that ``value`` contains, else ``value`` itself.

    As the original, this is a plain substring test applied to every option value, so
    ``"wash"`` gives ``"ash"`` and ``"standard"`` gives ``"tan"``.
    """
    for color in COLOR_SET:
        if color in value:
            return color
    return value


_NON_WORD = re.compile(r"\W", re.UNICODE)


def _fuzz_process(text: str) -> str:
    text = text.encode("ascii", "ignore").decode()
    return _NON_WORD.sub(" ", text).lower().strip()


def token_set_ratio(a: str, b: str) -> int:
    """thefuzz's ``fuzz.token_set_ratio``: processed strings, integer score in 0..100."""
    a, b = _fuzz_process(a), _fuzz_process(b)
    if not a or not b:
        return 0
    return int(round(fuzz.token_set_ratio(a, b, processor=None)))


# ---- the noun substitute ----------------------------------------------------------

_STOP_WORD_LIST = """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each either every few for from
further had has have having he her here hers him his how i if in into is it its itself just me more
most my neither no nor not now of off on once only or other our ours out over own per plus same she
should so some such than that the their theirs them then there these they this those through to too
under until up upon us very via was we were what when where which while who whom why will with
within without would you your yours
"""
_STOP_WORDS = frozenset(_STOP_WORD_LIST.split())
_UNIT_LIST = """
oz ounce ounces fl floz ml l liter liters litre litres cl lb lbs pound pounds g gr gram grams kg mg
mcg inch inches in ft feet foot cm mm m meter meters yard yards qt quart quarts gal gallon gallons
pt pint pints pack packs pk pcs pc piece pieces count ct ea each dozen pair pairs x xs xl xxl xxxl w
h d mah v volt watts watt btu gb tb mb ghz mhz hz
"""
_UNITS = frozenset(_UNIT_LIST.split())
_ADJECTIVE_LIST = """
new best great good premium professional pro deluxe classic original ultra super extra mini small
large big medium tall short long wide narrow thin thick slim light heavy lightweight soft hard
smooth rough warm cool cold hot fresh natural organic pure vegan healthy free gluten non low high
full half double single triple multi multiple compact portable adjustable durable waterproof
breathable comfortable comfy cozy cute elegant fashionable modern vintage retro rustic casual formal
sexy stylish trendy luxury luxurious simple easy quick fast instant gentle strong sensitive dry oily
normal daily everyday nightly unisex perfect ideal beautiful pretty lovely fancy fun funny novelty
assorted mixed various variety flavored unflavored unscented scented sweet salty sour spicy hot mild
savory crunchy crispy chewy creamy rich dark bright clear transparent matte glossy shiny metallic
solid striped floral printed plaid plain basic essential essentials authentic genuine real faux
artificial synthetic handmade homemade custom personalized universal standard regular official
certified lasting anti quiet silent smart wireless electric digital automatic manual rechargeable
cordless mobile indoor outdoor outer inner upper lower front back left right top bottom side round
square oval rectangular flat curved straight open closed loose fitted relaxed oversized petite
sleeveless hooded lined unlined quilted knitted woven wooden stainless
"""
_ADJECTIVES = frozenset(_ADJECTIVE_LIST.split())
_NOUN_EXCEPTION_LIST = """
olive sieve knife drive archive olive motive incentive necklace bed daybed flatbed seabed hundred
table cable stable vegetable turntable bible jelly belly lily rally trolley pulley
"""
_NOUN_EXCEPTIONS = frozenset(_NOUN_EXCEPTION_LIST.split())
_ADJECTIVE_ENDINGS = ("less", "ful", "ous", "able", "ible", "ive", "ly")
_LETTERS = re.compile(r"[a-z]+")


def _is_noun(word: str) -> bool:
    if len(word) < 2 or word in _STOP_WORDS or word in _UNITS or word in _ADJECTIVES or word in COLOR_SET:
        return False
    if word in _NOUN_EXCEPTIONS or word.endswith("bed"):
        return True
    if word.endswith(_ADJECTIVE_ENDINGS):
        return False
    return not (word.endswith("ed") and len(word) > 5)


@lru_cache(maxsize=8192)
def title_nouns(title: str) -> tuple[str, ...]:
    """The nouns of a product title, lowercased, in order (duplicates kept, as spaCy's list).

    The deterministic stand-in for spaCy's NOUN/PROPN tags described in the module docstring.
    """
    return tuple(word for word in _LETTERS.findall(title.lower()) if _is_noun(word))


# ---- the reward -------------------------------------------------------------------


def _category_levels(path: str) -> set[str]:
    return {level.strip() for level in path.split("›")}


def type_reward(purchased: Product, goal: Goal) -> dict[str, Any]:
    """``r_type`` and its inputs: ``query_match``, ``category_match``, ``title_score``."""
    query_match = purchased.query == goal.query
    category_match = len(_category_levels(purchased.product_category) & _category_levels(goal.product_category)) >= 2
    desired = title_nouns(goal.name)
    bought = set(title_nouns(purchased.title))
    title_score = len(bought & set(desired)) / len(desired) if desired else 0.2
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match, "title_score": title_score}


def _in_text(value: str, product: Product) -> bool:
    """The original's fallback: ``value`` is a substring of the lowercased title, bullets or description."""
    return (
        value in product.title.lower()
        or value in " ".join(product.bullet_points).lower()
        or value in product.description.lower()
    )


def attribute_matches(purchased: Product, goal: Goal) -> int:
    """How many goal attributes the purchased product has (fuzzy, then substring)."""
    matches = 0
    for wanted in goal.attributes:
        if any(token_set_ratio(have, wanted) > FUZZY_THRESHOLD for have in purchased.attributes) or _in_text(
            wanted, purchased
        ):
            matches += 1
    return matches


def option_matches(purchased: Product, goal_values: list[str], options: dict[str, str]) -> int:
    """How many *purchased* options match a goal option value (size exact, others fuzzy, then substring)."""
    wanted = [normalize_color(value) for value in goal_values]
    matches = 0
    for name, value in options.items():
        value = normalize_color(value)
        if name.lower() in EXACT_MATCH_OPTIONS:
            matched = value in wanted
        else:
            matched = any(token_set_ratio(goal_value, value) > FUZZY_THRESHOLD for goal_value in wanted)
        if matched or _in_text(value, purchased):
            matches += 1
    return matches


def get_reward(purchased: Product, goal: Goal, price: float, options: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """The reward of buying ``purchased`` at ``price`` with ``options`` (name -> value) for ``goal``.

    Returns ``(reward, breakdown)``; ``breakdown`` holds ``r_type``, ``query_match``,
    ``category_match``, ``title_score``, ``r_att``, ``r_option`` (None without goal
    options), ``r_price``, the match counts, ``weights`` (``att``, ``option``, ``price``:
    each part's share of the sum) and ``uncapped`` (the formula before the cap at 1).
    """
    type_info = type_reward(purchased, goal)
    goal_values = list(goal.goal_options.values())
    r_price = price <= goal.price_upper
    num_attributes = attribute_matches(purchased, goal)
    num_options = option_matches(purchased, goal_values, options)
    denominator = len(goal.attributes) + len(goal_values) + 1
    uncapped = (num_attributes + num_options + int(r_price)) / denominator * type_info["r_type"]
    breakdown: dict[str, Any] = {
        **type_info,
        "r_att": num_attributes / len(goal.attributes) if goal.attributes else None,
        "r_option": num_options / len(goal_values) if goal_values else None,
        "r_price": r_price,
        "attribute_matches": num_attributes,
        "option_matches": num_options,
        "weights": {
            "att": len(goal.attributes) / denominator,
            "option": len(goal_values) / denominator,
            "price": 1 / denominator,
        },
        "uncapped": uncapped,
    }
    return min(uncapped, 1.0), breakdown
