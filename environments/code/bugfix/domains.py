"""The four library domains of BugFix's repositories and the tests generated for them.

A domain is a small Python package written as template files in ``templates/<domain>/``
(real modules, linted as code; the generator copies them into the repository byte for
byte, so an edit to one changes the tasks and their fingerprints) and, for each module
with tests, a function that draws that module's test inputs from the task's generator.
The tests are specified as :class:`Step` lists; their expected values are filled in by
running them on the correct code (:mod:`.repository`). ``templates/run_tests.py`` is the
test runner every repository ships; ``templates/close.py`` the float comparison the test
files use.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The folder of template files (package data).
TEMPLATES = Path(__file__).with_name("templates")


def template(path: str) -> str:
    """The text of the template file ``path`` (relative to :data:`TEMPLATES`, e.g. ``"stats/central.py"``)."""
    return (TEMPLATES / path).read_text(encoding="utf-8")


#: The test runner shipped in every repository.
RUNNER = template("run_tests.py")
#: How test files compare values that hold floats (also defined in those test files).
CLOSE_SOURCE = template("close.py")
_close_namespace: dict[str, Any] = {}
exec(CLOSE_SOURCE, _close_namespace)
close: Callable[[Any, Any], bool] = _close_namespace["close"]

# ---- test specifications -----------------------------------------------------------------------


@dataclass
class Step:
    """One line of a test: ``do`` a statement, ``check`` an expression's value, or ``raises``."""

    kind: str
    code: str
    error: str = ""
    #: Filled by evaluating on the correct code: the value's ``repr`` and whether it holds floats.
    expected: str = ""
    approx: bool = False


def do(code: str) -> Step:
    return Step("do", code)


def check(code: str) -> Step:
    return Step("check", code)


def raises(code: str, error: str = "ValueError") -> Step:
    return Step("raises", code, error)


@dataclass
class Case:
    name: str
    steps: list[Step]


@dataclass
class TestFile:
    """The tests of one module: the names it imports (by module) and its cases."""

    imports: dict[str, tuple[str, ...]]
    cases: list[Case]


@dataclass(frozen=True)
class Module:
    """A module template: its source, and the generator of its test file (None: no tests)."""

    name: str
    source: str
    tests: Callable[[random.Random], TestFile] | None = None
    #: Modules the tests use besides this one and what it imports.
    test_needs: tuple[str, ...] = ()

    @property
    def requires(self) -> tuple[str, ...]:
        """The modules this one imports, and those its tests need."""
        imported = [
            node.module
            for node in ast.parse(self.source).body
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        ]
        return tuple(dict.fromkeys([*imported, *self.test_needs]))


@dataclass(frozen=True)
class Domain:
    name: str
    packages: tuple[str, ...]
    description: str
    modules: dict[str, Module]


def ints(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    return [rng.randint(low, high) for _ in range(count)]


def distinct(rng: random.Random, count: int, low: int, high: int) -> list[int]:
    return rng.sample(range(low, high + 1), count)


# ---- domain: statistics ------------------------------------------------------------------------


def _tests_central(rng: random.Random) -> TestFile:
    odd = ints(rng, rng.choice((5, 7)), 1, 60)
    even = ints(rng, rng.choice((4, 6)), -20, 60)
    winner, other, third = distinct(rng, 3, 1, 30)
    common = [winner] * 3 + [other] * 2 + [third]
    rng.shuffle(common)
    low, high = sorted(distinct(rng, 2, 1, 30))
    tie = [high, low, high, low, third]
    values, weights = ints(rng, 4, 1, 20), ints(rng, 4, 1, 5)
    return TestFile(
        {"central": ("mean", "median", "midrange", "mode", "weighted_mean")},
        [
            Case("test_mean", [check(f"mean({odd})"), check(f"mean({even})")]),
            Case("test_mean_needs_values", [raises("mean([])")]),
            Case("test_median_odd_count", [check(f"median({odd})"), check(f"median([{rng.randint(1, 9)}])")]),
            Case("test_median_even_count", [check(f"median({even})")]),
            Case("test_mode", [check(f"mode({common})")]),
            Case("test_mode_tie_takes_smallest", [check(f"mode({tie})")]),
            Case("test_weighted_mean", [check(f"weighted_mean({values}, {weights})")]),
            Case("test_weighted_mean_checks_lengths", [raises(f"weighted_mean({values}, {weights[:3]})")]),
            Case("test_midrange", [check(f"midrange({odd})")]),
        ],
    )


def _tests_spread(rng: random.Random) -> TestFile:
    values = ints(rng, rng.choice((5, 6, 7)), 1, 40)
    while len(set(values)) < 3:
        values = ints(rng, len(values), 1, 40)
    single = rng.randint(1, 9)
    return TestFile(
        {"spread": ("interquartile_range", "mean_absolute_deviation", "quantile", "stdev", "value_range", "variance")},
        [
            Case("test_sample_variance", [check(f"variance({values})")]),
            Case("test_population_variance", [check(f"variance({values}, sample=False)")]),
            Case(
                "test_variance_of_one_value",
                [check(f"variance([{single}], sample=False)"), raises(f"variance([{single}])")],
            ),
            Case("test_stdev", [check(f"stdev({values})"), check(f"stdev({values}, sample=False)")]),
            Case("test_value_range", [check(f"value_range({values})")]),
            Case(
                "test_quantile",
                [check(f"quantile({values}, {fraction})") for fraction in (0, 0.25, 0.5, 0.9, 1)],
            ),
            Case("test_quantile_rejects_bad_fraction", [raises(f"quantile({values}, 1.5)")]),
            Case("test_interquartile_range", [check(f"interquartile_range({values})")]),
            Case("test_mean_absolute_deviation", [check(f"mean_absolute_deviation({values})")]),
        ],
    )


def _tests_scale(rng: random.Random) -> TestFile:
    values = distinct(rng, rng.choice((4, 5, 6)), 0, 50)
    same = [rng.randint(1, 9)] * 3
    low, high = sorted(distinct(rng, 2, 10, 40))
    return TestFile(
        {"scale": ("clip", "normalize", "rescale", "zscores")},
        [
            Case("test_normalize", [check(f"normalize({values})")]),
            Case("test_normalize_constant_values", [check(f"normalize({same})")]),
            Case("test_rescale", [check(f"rescale({values}, -1, 1)"), check(f"rescale({values}, 10, 20)")]),
            Case("test_rescale_rejects_inverted_range", [raises(f"rescale({values}, 5, 1)")]),
            Case("test_zscores", [check(f"zscores({values})")]),
            Case("test_zscores_constant_values", [check(f"zscores({same})")]),
            Case("test_clip", [check(f"clip({values}, {low}, {high})")]),
            Case("test_clip_rejects_bad_bounds", [raises(f"clip({values}, {high}, {low})")]),
        ],
    )


def _tests_series(rng: random.Random) -> TestFile:
    values = ints(rng, rng.choice((6, 7, 8)), 1, 50)
    signed = ints(rng, 6, -20, 20)
    return TestFile(
        {"series": ("cumulative_sum", "differences", "moving_average", "percent_change", "running_max")},
        [
            Case(
                "test_moving_average",
                [check(f"moving_average({values}, 2)"), check(f"moving_average({values}, 3)")],
            ),
            Case("test_moving_average_whole_series", [check(f"moving_average({values}, {len(values)})")]),
            Case("test_moving_average_window_too_large", [raises(f"moving_average({values}, {len(values) + 1})")]),
            Case("test_cumulative_sum", [check(f"cumulative_sum({signed})"), check("cumulative_sum([])")]),
            Case("test_differences", [check(f"differences({values})"), check(f"differences({values}, lag=2)")]),
            Case("test_differences_rejects_zero_lag", [raises(f"differences({values}, lag=0)")]),
            Case("test_running_max", [check(f"running_max({signed})")]),
            Case("test_percent_change", [check(f"percent_change({values})")]),
            Case("test_percent_change_from_zero", [raises("percent_change([0, 5, 10])")]),
        ],
    )


def _tests_outliers(rng: random.Random) -> TestFile:
    base = ints(rng, rng.choice((8, 9, 10)), 40, 60)
    spiked = base + [rng.randint(150, 200), rng.randint(-90, -50)]
    rng.shuffle(spiked)
    calm = distinct(rng, 6, 10, 20)
    spike = ints(rng, 9, 10, 12) + [rng.randint(60, 90)]
    rng.shuffle(spike)
    return TestFile(
        {"outliers": ("iqr_bounds", "iqr_outliers", "trimmed", "zscore_outliers")},
        [
            Case("test_iqr_bounds", [check(f"iqr_bounds({base})"), check(f"iqr_bounds({base}, factor=3)")]),
            Case("test_iqr_outliers", [check(f"iqr_outliers({spiked})")]),
            Case("test_iqr_outliers_none", [check(f"iqr_outliers({calm})")]),
            Case("test_zscore_outliers", [check(f"zscore_outliers({spike})"), check(f"zscore_outliers({calm})")]),
            Case("test_trimmed", [check(f"trimmed({spiked}, 0.1)"), check(f"trimmed({calm}, 0.2)")]),
            Case("test_trimmed_too_much", [raises(f"trimmed({calm}, 0.5)")]),
        ],
    )


def _tests_histogram(rng: random.Random) -> TestFile:
    bins = rng.choice((2, 4, 5))
    high = bins * rng.choice((2, 5))
    values = ints(rng, 12, -2, high + 2) + [0, high]
    rng.shuffle(values)
    repeated = ints(rng, 9, 1, 5)
    return TestFile(
        {"histogram": ("bin_edges", "frequencies", "histogram")},
        [
            Case("test_bin_edges", [check(f"bin_edges(0, {high}, {bins})"), check("bin_edges(-1, 1, 4)")]),
            Case("test_bin_edges_rejects_bad_arguments", [raises("bin_edges(5, 5, 2)"), raises("bin_edges(0, 1, 0)")]),
            Case("test_histogram", [check(f"histogram({values}, {bins}, 0, {high})")]),
            Case("test_histogram_top_edge_in_last_bin", [check(f"histogram([{high}, {high}, 0], {bins}, 0, {high})")]),
            Case("test_frequencies", [check(f"frequencies({repeated})")]),
        ],
    )


STATS = Domain(
    "stats",
    ("statkit", "tinystats", "numbox", "quickstats", "metricly", "figures"),
    "descriptive statistics: central tendency, spread, scaling, series, outliers and histograms",
    {
        module.name: module
        for module in (
            Module("_validate", template("stats/_validate.py")),
            Module("central", template("stats/central.py"), _tests_central),
            Module("spread", template("stats/spread.py"), _tests_spread),
            Module("scale", template("stats/scale.py"), _tests_scale),
            Module("series", template("stats/series.py"), _tests_series),
            Module("outliers", template("stats/outliers.py"), _tests_outliers),
            Module("histogram", template("stats/histogram.py"), _tests_histogram),
        )
    },
)

# ---- domain: text ------------------------------------------------------------------------------


PHRASES = (
    "parse HTTP response",
    "user id",
    "XMLHttpRequest",
    "total_amount_due",
    "get2ndItem",
    "load-config-file",
    "Max retry count",
    "isReadyForReview",
    "HTML to PDF converter",
    "shipping address line 2",
)


def _word_list(text: str) -> list[str]:
    return text.split()


WORDS = _word_list(
    "river stone cloud garden window letter market silver forest engine bridge candle harbor pocket ladder "
    "signal meadow copper lantern velvet orbit puzzle ribbon saddle tunnel"
)


def _sentence(rng: random.Random, low: int, high: int, stopwords: bool = True) -> str:
    pool = WORDS + (["the", "a", "of", "and", "is", "to"] * 2 if stopwords else [])
    words = [rng.choice(pool) for _ in range(rng.randint(low, high))]
    return " ".join(words)


def _tests_case(rng: random.Random) -> TestFile:
    phrases = rng.sample(PHRASES, 3)
    title = f"the {rng.choice(WORDS)} of the {rng.choice(WORDS)} and a {rng.choice(WORDS)}"
    return TestFile(
        {"case": ("title_case", "to_camel", "to_kebab", "to_pascal", "to_snake")},
        [
            Case("test_to_snake", [check(f"to_snake({phrase!r})") for phrase in phrases]),
            Case("test_to_kebab", [check(f"to_kebab({phrases[0]!r})")]),
            Case("test_to_camel", [check(f"to_camel({phrase!r})") for phrase in phrases[1:]]),
            Case("test_to_camel_empty", [check("to_camel('  ')")]),
            Case("test_to_pascal", [check(f"to_pascal({phrases[2]!r})")]),
            Case("test_title_case", [check(f"title_case({title!r})"), check("title_case('OF MICE AND MEN')")]),
        ],
    )


def _tests_tokens(rng: random.Random) -> TestFile:
    text = _sentence(rng, 6, 10).capitalize() + ", " + _sentence(rng, 2, 4) + "!"
    tokens = [rng.choice(WORDS) for _ in range(rng.randint(4, 6))]
    story = f"{_sentence(rng, 3, 5)}. {_sentence(rng, 2, 4)}? {_sentence(rng, 2, 3)}! {_sentence(rng, 1, 3)}"
    return TestFile(
        {"tokens": ("ngrams", "remove_stopwords", "sentences", "tokenize")},
        [
            Case("test_tokenize", [check(f"tokenize({text!r})"), check("tokenize('--')")]),
            Case("test_remove_stopwords", [check(f"remove_stopwords(tokenize({text!r}))")]),
            Case("test_ngrams", [check(f"ngrams({tokens}, 2)"), check(f"ngrams({tokens}, 3)")]),
            Case("test_ngrams_longer_than_tokens", [check(f"ngrams({tokens[:2]}, 3)")]),
            Case("test_ngrams_rejects_zero", [raises(f"ngrams({tokens}, 0)")]),
            Case("test_sentences", [check(f"sentences({story!r})")]),
        ],
    )


def _tests_counting(rng: random.Random) -> TestFile:
    text = " ".join(rng.choice(WORDS[:6] + ["the", "of", "a"]) for _ in range(rng.randint(10, 16)))
    mixed = _sentence(rng, 4, 7).title() + "!"
    return TestFile(
        {"counting": ("average_word_length", "letter_frequencies", "lexical_diversity", "top_words", "word_counts")},
        [
            Case("test_word_counts", [check(f"word_counts({text!r})")]),
            Case("test_word_counts_without_stopwords", [check(f"word_counts({text!r}, skip_stopwords=True)")]),
            Case("test_top_words", [check(f"top_words({text!r}, 2)"), check(f"top_words({text!r}, 3, False)")]),
            Case("test_letter_frequencies", [check(f"letter_frequencies({mixed!r})")]),
            Case("test_average_word_length", [check(f"average_word_length({mixed!r})")]),
            Case("test_average_word_length_empty", [check("average_word_length('...')")]),
            Case("test_lexical_diversity", [check(f"lexical_diversity({text!r})"), check("lexical_diversity('')")]),
        ],
    )


def _tests_layout(rng: random.Random) -> TestFile:
    text = _sentence(rng, 8, 14)
    width = rng.randint(10, 18)
    word = rng.choice(WORDS)
    rows = [[rng.choice(WORDS), str(rng.randint(1, 999))] for _ in range(3)]
    return TestFile(
        {"layout": ("center", "columns", "indent", "truncate", "wrap")},
        [
            Case("test_wrap", [check(f"wrap({text!r}, {width})"), check(f"wrap({text!r}, {width + 7})")]),
            Case("test_wrap_long_word_stands_alone", [check(f"wrap('a {'x' * 12} b', 5)")]),
            Case("test_wrap_rejects_zero_width", [raises("wrap('a b', 0)")]),
            Case(
                "test_truncate",
                [
                    check(f"truncate({text!r}, {width})"),
                    check(f"truncate({word!r}, {len(word)})"),
                    check(f"truncate({text!r}, 2)"),
                ],
            ),
            Case("test_center", [check(f"center({word!r}, {len(word) + 5})"), check(f"center({word!r}, 2)")]),
            Case("test_indent", [check(f"indent('{word}\\n\\n  {word}', '> ')")]),
            Case("test_columns", [check(f"columns({rows})"), check(f"columns({rows}, gap=1)")]),
        ],
    )


def _tests_slug(rng: random.Random) -> TestFile:
    title = f"{rng.choice(WORDS).title()} & {rng.choice(WORDS)}: {rng.randint(2, 99)} {rng.choice(WORDS)}!"
    base = "-".join(rng.sample(WORDS, 2))
    taken = [base] + [f"{base}-{number}" for number in range(2, rng.randint(2, 5))]
    return TestFile(
        {"slug": ("slugify", "unique_slug")},
        [
            Case("test_slugify", [check(f"slugify({title!r})"), check(f"slugify({title!r}, separator='_')")]),
            Case("test_slugify_max_length", [check(f"slugify({title!r}, max_length={length})") for length in (5, 12)]),
            Case("test_unique_slug_free", [check(f"unique_slug({base.replace('-', ' ')!r}, [])")]),
            Case("test_unique_slug_taken", [check(f"unique_slug({base.replace('-', ' ')!r}, {taken})")]),
        ],
    )


def _tests_cipher(rng: random.Random) -> TestFile:
    text = f"{rng.choice(WORDS).title()} {rng.choice(WORDS)}-{rng.randint(1, 99)}, {rng.choice(WORDS)}!"
    shift = rng.randint(1, 25)
    palindrome = rng.choice(("Never odd or even", "A man, a plan, a canal: Panama", "Step on no pets", "Was it a car?"))
    runs = "".join(rng.choice("abc") * rng.randint(1, 4) for _ in range(4))
    return TestFile(
        {"cipher": ("caesar", "is_palindrome", "rot13", "run_length", "vowel_count")},
        [
            Case("test_caesar", [check(f"caesar({text!r}, {shift})"), check(f"caesar({text!r}, -{shift})")]),
            Case("test_rot13", [check(f"rot13({text!r})"), check(f"rot13(rot13({text!r}))")]),
            Case("test_is_palindrome", [check(f"is_palindrome({palindrome!r})"), check(f"is_palindrome({text!r})")]),
            Case("test_vowel_count", [check(f"vowel_count({text!r})")]),
            Case("test_run_length", [check(f"run_length({runs!r})"), check("run_length('')")]),
        ],
    )


TEXT = Domain(
    "text",
    ("textkit", "wordsmith", "strutil", "prose", "inkwell", "lexis"),
    "text utilities: naming conventions, tokens, word counts, layout, slugs and small ciphers",
    {
        module.name: module
        for module in (
            Module("_chars", template("text/_chars.py")),
            Module("case", template("text/case.py"), _tests_case),
            Module("tokens", template("text/tokens.py"), _tests_tokens),
            Module("counting", template("text/counting.py"), _tests_counting),
            Module("layout", template("text/layout.py"), _tests_layout),
            Module("slug", template("text/slug.py"), _tests_slug),
            Module("cipher", template("text/cipher.py"), _tests_cipher),
        )
    },
)

# ---- domain: inventory -------------------------------------------------------------------------


PRODUCTS = ("mug", "kettle", "lamp", "notebook", "stapler", "scarf", "umbrella", "candle", "teapot", "backpack")


def _sku(rng: random.Random) -> str:
    letters = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(3))
    return f"{letters}-{rng.randint(1000, 9999)}"


def _stock_setup(rng: random.Random, count: int) -> tuple[list[Step], list[str]]:
    skus = []
    while len(skus) < count:
        sku = _sku(rng)
        if sku not in skus:
            skus.append(sku)
    steps = [do("inventory = Inventory()")]
    for sku in skus:
        name, price, quantity = rng.choice(PRODUCTS), rng.randint(150, 9_000), rng.randint(0, 40)
        steps.append(do(f"inventory.add(Item({sku!r}, {name!r}, {price}, {quantity}))"))
    return steps, skus


def _tests_money(rng: random.Random) -> TestFile:
    cents = rng.randint(100, 99_999)
    amount = f"{cents // 100}.{cents % 100:02d}"
    big = rng.randint(100_000, 99_999_999)
    parts = rng.randint(2, 7)
    return TestFile(
        {"money": ("add_tax", "apply_discount", "format_amount", "parse_amount", "split_evenly")},
        [
            Case(
                "test_parse_amount",
                [check(f"parse_amount({text!r})") for text in (amount, f"${big // 100:,}.{big % 100:02d}", "-3.07")]
                + [check(f"parse_amount('{rng.randint(1, 99)}.5')"), check(f"parse_amount('{rng.randint(1, 99)}')")],
            ),
            Case("test_parse_amount_rejects_garbage", [raises(f"parse_amount({t!r})") for t in ("abc", "1.234", "")]),
            Case("test_format_amount", [check(f"format_amount({big})"), check(f"format_amount(-{cents})")]),
            Case("test_format_amount_small", [check("format_amount(5)"), check("format_amount(0)")]),
            Case(
                "test_apply_discount",
                [check(f"apply_discount({cents}, {rng.randint(1, 60)})"), check(f"apply_discount({cents}, 0)")]
                + [check("apply_discount(999, 50)")],
            ),
            Case("test_apply_discount_rejects_bad_percent", [raises(f"apply_discount({cents}, 120)")]),
            Case("test_add_tax", [check(f"add_tax({cents}, {rng.randint(5, 25)})"), check("add_tax(250, 10)")]),
            Case("test_split_evenly", [check(f"split_evenly({cents}, {parts})"), check("split_evenly(100, 3)")]),
            Case("test_split_evenly_rejects_zero_parts", [raises(f"split_evenly({cents}, 0)")]),
        ],
    )


def _tests_items(rng: random.Random) -> TestFile:
    sku, cents, quantity = _sku(rng), rng.randint(100, 9_999), rng.randint(1, 50)
    line = f"{sku}; {rng.choice(PRODUCTS).title()}; {cents // 100}.{cents % 100:02d}; {quantity}"
    return TestFile(
        {"items": ("Item", "parse_item", "valid_sku")},
        [
            Case(
                "test_valid_sku",
                [check(f"valid_sku({sku!r})")]
                + [check(f"valid_sku({bad!r})") for bad in (sku.lower(), sku.replace("-", "_"), sku[:-1], sku + "0")],
            ),
            Case(
                "test_parse_item",
                [do(f"item = parse_item({line!r})")]
                + [check(f"item.{name}") for name in ("sku", "name", "price", "quantity")],
            ),
            Case("test_parse_item_rejects_bad_lines", [raises(f"parse_item({line.rsplit(';', 1)[0]!r})")]),
            Case("test_parse_item_rejects_bad_sku", [raises(f"parse_item({line.replace('-', '', 1)!r})")]),
            Case("test_item_value", [check(f"Item({sku!r}, 'x', {cents}, {quantity}).value")]),
        ],
    )


def _tests_stock(rng: random.Random) -> TestFile:
    setup, skus = _stock_setup(rng, rng.randint(3, 5))
    first, second = skus[0], skus[1]
    return TestFile(
        {"items": ("Item",), "stock": ("Inventory",)},
        [
            Case("test_quantity", setup + [check(f"inventory.quantity({sku!r})") for sku in skus]),
            Case("test_quantity_of_unknown_sku", setup + [check("inventory.quantity('ZZZ-0000')")]),
            Case(
                "test_add_existing_sku_adds_up",
                setup
                + [do(f"inventory.add(Item({first!r}, 'x', 100, 5))"), check(f"inventory.quantity({first!r})")]
                + [check("[item.price for item in inventory.items()]")],
            ),
            Case(
                "test_remove",
                setup
                + [do(f"inventory.add(Item({second!r}, 'x', 100, 10))"), do(f"inventory.remove({second!r}, 4)")]
                + [check(f"inventory.quantity({second!r})")],
            ),
            Case(
                "test_remove_everything",
                setup
                + [do(f"inventory.remove({first!r}, inventory.quantity({first!r}))")]
                + [check(f"inventory.quantity({first!r})")],
            ),
            Case("test_remove_too_many", setup + [raises(f"inventory.remove({first!r}, 1000)")]),
            Case("test_remove_unknown", setup + [raises("inventory.remove('ZZZ-0000', 1)", "KeyError")]),
            Case("test_add_negative", setup + [raises(f"inventory.add(Item({first!r}, 'x', 100, -1))")]),
            Case("test_low_stock", setup + [check("inventory.low_stock(10)"), check("inventory.low_stock(25)")]),
            Case("test_totals_and_order", setup + [check("inventory.total_units()"), check("inventory.skus()")]),
        ],
    )


def _tests_pricing(rng: random.Random) -> TestFile:
    price = rng.randint(100, 5_000)
    lines = [(rng.randint(100, 5_000), rng.choice((1, 3, 10, 12, 50, 60, 100, 120))) for _ in range(3)]
    return TestFile(
        {"pricing": ("bulk_discount", "line_total", "order_total", "shipping_cost", "unit_price")},
        [
            Case("test_bulk_discount", [check(f"bulk_discount({q})") for q in (1, 9, 10, 49, 50, 99, 100, 250)]),
            Case("test_unit_price", [check(f"unit_price({price}, {q})") for q in (1, 10, 50, 100)]),
            Case("test_line_total", [check(f"line_total({price}, {q})") for q in (0, 7, 60)]),
            Case("test_line_total_rejects_negative", [raises(f"line_total({price}, -1)")]),
            Case(
                "test_order_total",
                [check(f"order_total({lines})"), check(f"order_total({lines}, tax_rate={rng.randint(5, 20)})")]
                + [check(f"order_total({lines}, tax_rate=10, coupon=500)")],
            ),
            Case("test_order_total_coupon_never_negative", [check("order_total([(100, 1)], coupon=500)")]),
            Case("test_shipping_cost", [check(f"shipping_cost({g})") for g in (500, 1000, 1001, 2500)]),
            Case("test_shipping_cost_express", [check("shipping_cost(1500, express=True)")]),
            Case("test_shipping_cost_rejects_zero", [raises("shipping_cost(0)")]),
        ],
    )


def _tests_reports(rng: random.Random) -> TestFile:
    setup, _ = _stock_setup(rng, rng.randint(3, 5))
    return TestFile(
        {
            "items": ("Item",),
            "stock": ("Inventory",),
            "reports": ("most_valuable", "restock_list", "stock_value", "summary_lines"),
        },
        [
            Case("test_stock_value", setup + [check("stock_value(inventory)")]),
            Case("test_stock_value_empty", [check("stock_value(Inventory())")]),
            Case(
                "test_most_valuable",
                setup + [check("most_valuable(inventory, 2)"), check("most_valuable(inventory, 9)")],
            ),
            Case("test_restock_list", setup + [check("restock_list(inventory, 20, 50)")]),
            Case("test_summary_lines", setup + [check("summary_lines(inventory)")]),
        ],
    )


SHOP = Domain(
    "inventory",
    ("stockroom", "shelfwise", "inventra", "stocklib", "depotkit", "cratekit"),
    "a small inventory library: money in cents, items, stock keeping, pricing and reports",
    {
        module.name: module
        for module in (
            Module("_rounding", template("inventory/_rounding.py")),
            Module("money", template("inventory/money.py"), _tests_money),
            Module("items", template("inventory/items.py"), _tests_items),
            Module("stock", template("inventory/stock.py"), _tests_stock),
            Module("pricing", template("inventory/pricing.py"), _tests_pricing),
            Module("reports", template("inventory/reports.py"), _tests_reports, test_needs=("stock",)),
        )
    },
)

# ---- domain: dates -----------------------------------------------------------------------------


def _date(rng: random.Random, low: int = 1990, high: int = 2030) -> tuple[int, int, int]:
    year, month = rng.randint(low, high), rng.randint(1, 12)
    return (year, month, rng.randint(1, 28))


def _tests_months(rng: random.Random) -> TestFile:
    month = rng.randint(1, 12)
    names = ("January", "February", "March", "April", "May", "June")
    names += ("July", "August", "September", "October", "November", "December")
    name = names[rng.randint(0, 11)]
    return TestFile(
        {"months": ("days_in_year", "month_lengths", "month_name", "month_number", "quarter")},
        [
            Case("test_month_name", [check(f"month_name({month})"), check(f"month_name({month}, short=True)")]),
            Case("test_month_name_rejects_13", [raises("month_name(13)"), raises("month_name(0)")]),
            Case(
                "test_month_number",
                [check(f"month_number({name!r})"), check(f"month_number({name[:3].lower()!r})")]
                + [check("month_number(' DEC ')")],
            ),
            Case("test_month_number_unknown", [raises("month_number('Smarch')")]),
            Case("test_days_in_year", [check(f"days_in_year({year})") for year in (2023, 2024, 1900, 2000)]),
            Case("test_quarter", [check(f"quarter({m})") for m in range(1, 13)]),
            Case("test_month_lengths", [check(f"month_lengths({rng.choice((2024, 2028, 2000))})")]),
            Case("test_month_lengths_common_year", [check(f"month_lengths({rng.choice((2023, 2025, 1900))})")]),
        ],
    )


def _tests_parsing(rng: random.Random) -> TestFile:
    date = _date(rng)
    iso = f"{date[0]:04d}-{date[1]:02d}-{date[2]:02d}"
    us = f"{date[1]:02d}/{date[2]:02d}/{date[0]}"
    return TestFile(
        {"parsing": ("format_iso", "format_long", "parse_iso", "parse_long", "parse_us", "validate")},
        [
            Case("test_parse_iso", [check(f"parse_iso({iso!r})"), check("parse_iso('2024-02-29')")]),
            Case(
                "test_parse_iso_rejects_bad_dates",
                [raises(f"parse_iso({bad!r})") for bad in ("2023-02-29", "2024-13-01", "2024/01/01", "2024-04-31")],
            ),
            Case("test_format_iso", [check(f"format_iso({date})"), check("format_iso((987, 6, 5))")]),
            Case("test_parse_us", [check(f"parse_us({us!r})")]),
            Case("test_format_long", [check(f"format_long({date})")]),
            Case("test_parse_long", [check(f"parse_long(format_long({date}))"), check("parse_long('mar 5 2024')")]),
            Case("test_validate_day_zero", [raises(f"validate(({date[0]}, {date[1]}, 0))")]),
            Case("test_validate_last_day", [check("validate((2023, 12, 31))"), check("validate((2024, 2, 29))")]),
        ],
    )


def _tests_arithmetic(rng: random.Random) -> TestFile:
    date, other = _date(rng), _date(rng)
    days = rng.randint(40, 900)
    birth = _date(rng, 1950, 2000)
    return TestFile(
        {"arithmetic": ("add_days", "add_months", "age", "days_between", "is_before")},
        [
            Case("test_add_days", [check(f"add_days({date}, {days})"), check(f"add_days({date}, -{days})")]),
            Case(
                "test_add_days_across_leap_day",
                [check("add_days((2024, 2, 28), 1)"), check("add_days((2023, 2, 28), 1)")],
            ),
            Case(
                "test_add_days_across_years",
                [check("add_days((1999, 12, 31), 1)"), check("add_days((2000, 1, 1), -1)")],
            ),
            Case(
                "test_days_between", [check(f"days_between({date}, {other})"), check(f"days_between({date}, {date})")]
            ),
            Case(
                "test_add_months",
                [check(f"add_months({date}, {rng.randint(1, 30)})"), check("add_months((2023, 11, 15), 3)")],
            ),
            Case(
                "test_add_months_clamps_to_month_end",
                [check("add_months((2024, 1, 31), 1)"), check("add_months((2023, 3, 31), -1)")],
            ),
            Case("test_age", [check(f"age({birth}, (2024, {birth[1]}, {birth[2]}))"), check(f"age({birth}, {other})")]),
            Case("test_is_before", [check(f"is_before({date}, {other})"), check(f"is_before({date}, {date})")]),
        ],
    )


def _tests_weekdays(rng: random.Random) -> TestFile:
    date, count = _date(rng), rng.randint(3, 12)
    target = rng.randint(0, 6)
    later = (date[0], date[1], min(date[2] + count, 28))
    return TestFile(
        {
            "weekdays": (
                "add_business_days",
                "business_days_between",
                "day_name",
                "is_weekend",
                "next_weekday",
                "weekday",
            )
        },
        [
            Case(
                "test_weekday",
                [check(f"weekday({date})"), check("weekday((2024, 3, 1))"), check("weekday((2000, 1, 1))")],
            ),
            Case("test_day_name", [check(f"day_name({date})")]),
            Case("test_is_weekend", [check(f"is_weekend((2024, 3, {day}))") for day in (1, 2, 3, 4)]),
            Case(
                "test_next_weekday", [check(f"next_weekday({date}, {target})"), check("next_weekday((2024, 3, 1), 4)")]
            ),
            Case(
                "test_add_business_days",
                [check("add_business_days((2024, 3, 1), 1)"), check(f"add_business_days({date}, {count})")]
                + [check("add_business_days((2024, 3, 2), 1)"), check(f"add_business_days({date}, 0)")],
            ),
            Case("test_add_business_days_rejects_negative", [raises(f"add_business_days({date}, -1)")]),
            Case(
                "test_business_days_between",
                [
                    check(f"business_days_between({date}, {later})"),
                    check("business_days_between((2024, 3, 1), (2024, 3, 4))"),
                ],
            ),
        ],
    )


def _tests_periods(rng: random.Random) -> TestFile:
    date = _date(rng)
    year = rng.randint(1990, 2030)
    start = _date(rng, 2020, 2020)
    end = (2020, start[1], min(start[2] + rng.randint(3, 20), 28))
    first = ((2024, 1, rng.randint(1, 10)), (2024, 1, rng.randint(15, 25)))
    second = ((2024, 1, rng.randint(5, 20)), (2024, 2, rng.randint(1, 9)))
    return TestFile(
        {"periods": ("dates_between", "month_range", "overlap_days", "quarter_range", "week_start")},
        [
            Case(
                "test_month_range", [check("month_range(2024, 2)"), check(f"month_range({year}, {rng.randint(1, 12)})")]
            ),
            Case("test_quarter_range", [check(f"quarter_range({year}, {q})") for q in (1, 2, 3, 4)]),
            Case("test_quarter_range_rejects_5", [raises(f"quarter_range({year}, 5)")]),
            Case("test_week_start", [check(f"week_start({date})"), check(f"week_start({date}, first_weekday=6)")]),
            Case(
                "test_dates_between",
                [check(f"dates_between({start}, {end})"), check(f"dates_between({start}, {end}, step=3)")],
            ),
            Case(
                "test_overlap_days",
                [
                    check(f"overlap_days({first}, {second})"),
                    check(f"overlap_days({first}, ((2024, 3, 1), (2024, 3, 9)))"),
                ],
            ),
        ],
    )


DATES = Domain(
    "dates",
    ("datekit", "calendrix", "daytools", "almanac", "chronos", "timely"),
    "date utilities on (year, month, day) tuples: months, parsing, arithmetic, weekdays and periods",
    {
        module.name: module
        for module in (
            Module("_days", template("dates/_days.py")),
            Module("months", template("dates/months.py"), _tests_months),
            Module("parsing", template("dates/parsing.py"), _tests_parsing),
            Module("arithmetic", template("dates/arithmetic.py"), _tests_arithmetic),
            Module("weekdays", template("dates/weekdays.py"), _tests_weekdays),
            Module("periods", template("dates/periods.py"), _tests_periods),
        )
    },
)

DOMAINS: tuple[Domain, ...] = (STATS, TEXT, SHOP, DATES)
