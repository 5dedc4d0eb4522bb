"""WebShop's purchase reward: the original ``get_reward`` (``web_agent_site/engine/goal.py``).

``get_reward(purchased, goal, price, options)`` returns ``(reward, breakdown)``:

* **type factor** ``r_type``: the purchase's ``query`` equals the goal's (``query_match``),
  or the two category paths (``a › b › c``) share at least two levels, ignoring order
  (``category_match``), or ``title_score`` > 0.2, where ``title_score`` is the number of
  distinct nouns of the goal title (the target's) that are nouns of the purchase's title,
  over the number of noun tokens of the goal title (a goal title without nouns scores
  0.2). If none of the three holds, ``r_type`` = 0.5, else 1.0; then, whatever held,
  ``r_type`` = 0.1 when ``title_score`` < 0.1 and 0.0 when ``title_score`` = 0.
* **attributes**: for each *goal* attribute, one match when some attribute of the product
  has a token-set ratio above 85 with it, or else when it is a substring of the lowercased
  title, of the bullet points joined by spaces (lowercased) or of the lowercased description.
* **options**: both sides pass through :func:`normalize_color`; for each *goal* option
  value, one match when some *purchased* option value has a token-set ratio above 85 with
  it. Nothing else: sizes are fuzzy too ("32 inch" matches "34 inch"), and a value found
  in the product's text does not count, so the option matches never exceed the goal's
  option count and the reward never exceeds 1.
* **price**: ``price <= goal.price_upper``.

``reward = (attribute matches + option matches + price ok) / (goal attributes + goal
options + 1) * r_type``.

**Nouns.** The original tags both titles with spaCy and keeps tokens whose ``pos_`` is
NOUN or PROPN (lowercased, duplicates kept). Here a :class:`NounTagger` does it: a
:class:`SpacyNounTagger` around any spaCy pipeline (``en_core_web_sm`` as the original's
HEAD, ``en_core_web_lg`` as its first release and the published results) reproduces the
original's ``title_score`` exactly; :class:`RuleNounTagger` is the offline stand-in used when
no spaCy English pipeline is installed. :func:`noun_tagger` picks one (``"auto"``: the
pipeline named by ``$WEBSHOP_SPACY_MODEL``, else ``en_core_web_sm``, when installed; else the
rules). ``breakdown["noun_tagger"]`` names the tagger that scored the purchase.

**Fuzzy ratio.** The original pins ``thefuzz==0.19.0`` without python-Levenshtein, whose
``token_set_ratio`` uses :class:`difflib.SequenceMatcher`; :func:`token_set_ratio` is that
function (see its docstring). Later thefuzz versions (0.20+) and python-Levenshtein compute
an InDel ratio instead, which can differ by a point or two on some pairs.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Protocol

from agentgym.environments.webshop.data import Goal, Product

#: A match needs a token-set ratio strictly above this (the original's ``score > 85``).
FUZZY_THRESHOLD = 85
#: The pipeline ``noun_tagger("auto")`` tries first, unless ``$WEBSHOP_SPACY_MODEL`` names another.
DEFAULT_SPACY_MODEL = "en_core_web_sm"
SPACY_MODEL_ENV = "WEBSHOP_SPACY_MODEL"
#: The part-of-speech tags the original counts as nouns (``PNOUN`` is not a spaCy tag; kept as the original lists it).
NOUN_POS = ("PNOUN", "NOUN", "PROPN")

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


# ---- thefuzz 0.19.0's token_set_ratio ----------------------------------------------------

#: thefuzz 0.19's ``force_ascii`` deletes the code points 128-255 only (others stay).
_LATIN1_HIGH = dict.fromkeys(range(128, 256))
_NON_WORD = re.compile(r"\W")


def _fuzz_process(text: str) -> str:
    return _NON_WORD.sub(" ", text.translate(_LATIN1_HIGH)).lower().strip()


def _sequence_ratio(a: str, b: str) -> int:
    if a == b:
        return 100
    if not a or not b:
        return 0
    return int(round(100 * difflib.SequenceMatcher(None, a, b).ratio()))


@lru_cache(maxsize=65536)
def token_set_ratio(a: str, b: str) -> int:
    """``thefuzz.fuzz.token_set_ratio`` of thefuzz 0.19.0 with difflib (the original's pinned setup).

    Both strings lose the code points 128-255, get every non-word character replaced by a
    space, are lowercased and stripped (0 if either is then empty); with ``I`` the sorted
    common tokens, ``A`` = ``I`` + the sorted tokens only in ``a`` and ``B`` likewise, the
    score is the largest of ``ratio(I, A)``, ``ratio(I, B)``, ``ratio(A, B)``, where
    ``ratio`` is 100 for equal strings, 0 when one is empty, else ``round(100 *
    SequenceMatcher(None, x, y).ratio())``.
    """
    a, b = _fuzz_process(a), _fuzz_process(b)
    if not a or not b:
        return 0
    tokens_a, tokens_b = set(a.split()), set(b.split())
    common = " ".join(sorted(tokens_a & tokens_b))
    with_a = f"{common} {' '.join(sorted(tokens_a - tokens_b))}".strip()
    with_b = f"{common} {' '.join(sorted(tokens_b - tokens_a))}".strip()
    return max(_sequence_ratio(common, with_a), _sequence_ratio(common, with_b), _sequence_ratio(with_a, with_b))


# ---- the rule-based noun tagger (no spaCy) ---------------------------------------------

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

    The deterministic stand-in for spaCy's NOUN/PROPN tags: the lowercased alphabetic
    tokens of the title (split at every non-letter, so ``Women's`` gives ``women`` and
    ``3-Ounce`` gives ``ounce``), minus one-letter tokens, English function words, units
    and pack words (``oz``, ``ounce``, ``pack``, ``count`` ...), colour words, a lexicon of
    adjectives common in product titles, and words with adjective or adverb endings
    (``-less``, ``-ful``, ``-ous``, ``-able``, ``-ible``, ``-ive``, ``-ly``, and ``-ed`` in
    words longer than five letters). Brand names stay in, as spaCy tags them PROPN. spaCy's
    tags depend on context and capitalisation, so ``title_score`` of two different titles
    can differ from spaCy's; it is 1.0 for the target itself either way.
    """
    return tuple(word for word in _LETTERS.findall(title.lower()) if _is_noun(word))


# ---- noun taggers ------------------------------------------------------------------------


class NounTagger(Protocol):
    """Gives the nouns of a product title, lowercased, in order, duplicates kept."""

    name: str

    def nouns(self, title: str) -> tuple[str, ...]: ...


class RuleNounTagger:
    """The offline stand-in for spaCy: :func:`title_nouns` (rules described there)."""

    name = "rules"

    def nouns(self, title: str) -> tuple[str, ...]:
        return title_nouns(title)


class SpacyNounTagger:
    """The original's tagging: tokens of ``nlp(title)`` whose ``pos_`` is in :data:`NOUN_POS`, lowercased.

    ``nlp`` is a loaded :class:`spacy.language.Language`; ``name`` says which (``"spacy:" +
    the pipeline's package name``, or ``label`` when given). Calls are serialised by a lock
    and the last 8,192 titles are cached.
    """

    def __init__(self, nlp: Any, label: str | None = None) -> None:
        self.nlp = nlp
        meta = getattr(nlp, "meta", {}) or {}
        pipeline = f"{meta.get('lang', 'xx')}_{meta.get('name', 'pipeline')}-{meta.get('version', '0')}"
        self.name = f"spacy:{label or pipeline}"
        self._lock = threading.Lock()
        self._cached: Callable[[str], tuple[str, ...]] = lru_cache(maxsize=8192)(self._tag)

    def _tag(self, title: str) -> tuple[str, ...]:
        with self._lock:
            doc = self.nlp(title)
        return tuple(token.text.lower() for token in doc if token.pos_ in NOUN_POS)

    def nouns(self, title: str) -> tuple[str, ...]:
        return self._cached(title)

    def __repr__(self) -> str:
        return f"SpacyNounTagger({self.name!r})"


RULES = RuleNounTagger()
_SPACY_TAGGERS: dict[str, SpacyNounTagger] = {}
_SPACY_LOCK = threading.Lock()


def spacy_tagger(model: str | os.PathLike[str]) -> SpacyNounTagger:
    """A tagger on ``spacy.load(model)`` (a package name such as ``en_core_web_sm`` or a
    pipeline folder), loaded once per process and shared. Raises ``ImportError``/``OSError``
    as spaCy does when the pipeline is not installed."""
    key = os.fspath(model)
    with _SPACY_LOCK:
        tagger = _SPACY_TAGGERS.get(key)
        if tagger is None:
            import spacy

            nlp = spacy.load(key)
            label = key if importlib.util.find_spec(key.replace("-", "_")) is not None else None
            tagger = _SPACY_TAGGERS[key] = SpacyNounTagger(nlp, label=label)
    return tagger


def _installed(model: str) -> bool:
    """Whether ``model`` names a pipeline folder or an importable pipeline package (cheap: no spaCy import)."""
    if os.path.isdir(model):
        return True
    try:
        return importlib.util.find_spec(model) is not None
    except (ImportError, ValueError):
        return False


def noun_tagger(spec: str | os.PathLike[str] | NounTagger | None = "auto") -> NounTagger:
    """The tagger that ``spec`` names.

    ``"auto"`` (or ``None``): the spaCy pipeline named by ``$WEBSHOP_SPACY_MODEL``, else
    ``en_core_web_sm``, when it is installed, else the rules; ``"rules"``: the rules;
    any other string or path: that spaCy pipeline (an error if it does not load); a
    :class:`NounTagger` object (e.g. :class:`SpacyNounTagger` around your own ``nlp``) as it is.
    """
    if spec is None or spec == "auto":
        model = os.environ.get(SPACY_MODEL_ENV) or DEFAULT_SPACY_MODEL
        if not _installed(model):
            return RULES
        try:
            return spacy_tagger(model)
        except (ImportError, OSError):
            return RULES
    if spec == "rules":
        return RULES
    if isinstance(spec, (str, os.PathLike)):
        return spacy_tagger(spec)
    if not callable(getattr(spec, "nouns", None)):
        raise TypeError(f"noun_tagger must be 'auto', 'rules', a spaCy pipeline name or a NounTagger, got {spec!r}")
    return spec


# ---- the reward ----------------------------------------------------------------------------


def _category_levels(path: str) -> set[str]:
    return {level.strip() for level in path.split("›")}


def type_reward(purchased: Product, goal: Goal, tagger: NounTagger = RULES) -> dict[str, Any]:
    """``r_type`` and its inputs: ``query_match``, ``category_match``, ``title_score``."""
    query_match = purchased.query == goal.query
    category_match = len(_category_levels(purchased.product_category) & _category_levels(goal.product_category)) >= 2
    desired = tagger.nouns(goal.name)
    bought = set(tagger.nouns(purchased.title))
    title_score = len(bought & set(desired)) / len(desired) if desired else 0.2
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match, "title_score": title_score}


def attribute_matches(purchased: Product, goal: Goal) -> int:
    """How many goal attributes the purchased product has (fuzzy against its attributes, else in its text)."""
    title = purchased.title.lower()
    bullets = " ".join(purchased.bullet_points).lower()
    description = purchased.description.lower()
    matches = 0
    for wanted in goal.attributes:
        if any(token_set_ratio(have, wanted) > FUZZY_THRESHOLD for have in purchased.attributes):  # noqa: SIM114
            matches += 1
        elif wanted in title or wanted in bullets or wanted in description:
            matches += 1
    return matches


def option_matches(goal_values: list[str], purchased_values: list[str]) -> int:
    """How many goal option values some purchased option value matches (colours normalised, ratio > 85)."""
    bought = [normalize_color(value) for value in purchased_values]
    return sum(
        any(token_set_ratio(have, normalize_color(wanted)) > FUZZY_THRESHOLD for have in bought)
        for wanted in goal_values
    )


def get_reward(
    purchased: Product,
    goal: Goal,
    price: float,
    options: dict[str, str],
    tagger: NounTagger | None = None,
) -> tuple[float, dict[str, Any]]:
    """The reward of buying ``purchased`` at ``price`` with ``options`` (name -> value) for ``goal``.

    ``tagger`` types the title nouns (default: ``noun_tagger("auto")``). Returns ``(reward,
    breakdown)``; ``breakdown`` holds ``r_type``, ``query_match``, ``category_match``,
    ``title_score``, ``r_att``, ``r_option`` (None without goal options), ``r_price``, the
    match counts, ``weights`` (``att``, ``option``, ``price``: each part's share of the sum)
    and ``noun_tagger`` (the tagger's name: ``"rules"`` or ``"spacy:<pipeline>"``).
    """
    tagger = tagger if tagger is not None else noun_tagger("auto")
    type_info = type_reward(purchased, goal, tagger)
    goal_values = list(goal.goal_options.values())
    r_price = price <= goal.price_upper
    num_attributes = attribute_matches(purchased, goal)
    num_options = option_matches(goal_values, list(options.values()))
    denominator = len(goal.attributes) + len(goal_values) + 1
    reward = (num_attributes + num_options + int(r_price)) / denominator * type_info["r_type"]
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
        "noun_tagger": tagger.name,
    }
    return reward, breakdown
