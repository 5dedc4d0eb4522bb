"""WebShop's website as a state machine: pages, clicks, searches, rendering, reward at purchase.

A :class:`Shop` is a catalog with its search index and goals; one per catalog per process
(:func:`load_shop`), shared by every :class:`Session`. A :class:`Session` is one visitor
working on one goal, on one of these pages, with these clickables (lowercased, as the
original text env lists them):

========== ============================================================================
page       clickables
========== ============================================================================
search     none; the search bar takes ``search[keywords]``
results    ``back to search``, ``< prev`` (from page 2), ``next >`` (while more results
           follow), and the ASIN of each product shown (10 per page, 50 results at most)
item       ``back to search``, ``< prev`` (to the results), ``description``, ``features``,
           ``reviews``, ``attributes`` (unless ``show_attributes=False``, the original's
           default), ``buy now``, then every option value of the product
sub page   ``back to search``, ``< prev`` (to the item): description, features (bullet
           points), reviews, attributes
done       none: the purchase is scored and the session is over
========== ============================================================================

Commands are ``search[keywords]`` and ``click[text]``, case-insensitive and tolerant of
spacing (``click[ Next> ]`` clicks ``next >``). A command that is malformed or not
available on the current page raises :class:`~agentgym.contract.core.InvalidAction` with a message
saying what is available. Clicking an option value selects it for its option (a value
offered by two options selects it for the last of them, as the original); ``< prev`` and
``back to search`` behave as in the original (back to search clears the query, the
selected options and the visited products).

Pages render in three modes, after the original ``WebAgentTextEnv``: ``text``, the visible
texts joined by `` [SEP] ``; ``text_rich``, one text per line with ``[button] ... [button_]``
around clickables and ``[clicked button] ... [clicked button_]`` around selected options and
visited products; ``html``, a page whose search input, buttons (class ``btn``), product links
(class ``product-link``) and option radios carry the original's ids and classes, each
button in a ``<form method="post">`` naming its command, so that a web front end can post it.
"""

from __future__ import annotations

import html
import os
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from agentgym.contract.core import InvalidAction, TaskSplits, quote
from agentgym.environments.webshop.reward import NounTagger, get_reward, noun_tagger, token_set_ratio
from agentgym.environments.webshop.search import PAGE_SIZE, SEARCH_RETURN_N, SearchIndex, shared_index

if TYPE_CHECKING:
    from agentgym.environments.webshop.data import Catalog, Goal, Product

SEARCH, RESULTS, ITEM, DONE = "search", "results", "item", "done"
SUB_PAGES = ("description", "features", "reviews", "attributes")
BACK_TO_SEARCH, NEXT_PAGE, PREV_PAGE, BUY_NOW = "back to search", "next >", "< prev", "buy now"
#: Button labels as shown on the pages (clickables are their lowercased forms).
LABELS = {
    BACK_TO_SEARCH: "Back to Search",
    NEXT_PAGE: "Next >",
    PREV_PAGE: "< Prev",
    BUY_NOW: "Buy Now",
    **{name: name.capitalize() for name in SUB_PAGES},
}
OBSERVATION_MODES = ("text", "text_rich", "html")
SEP = " [SEP] "
#: Goals of the original split convention: test = the first 500 goals, dev = the next 1,000, train = the rest.
TEST_GOALS, DEV_GOALS = 500, 1000

_COMMAND = re.compile(r"^\s*(search|click)\s*\[(.*)\]\s*$", re.IGNORECASE | re.DOTALL)
_SPACES = re.compile(r"\s+")
_PRICE_CLAUSE = re.compile(r",?\s*and price lower than [\d.,]+ dollars", re.IGNORECASE)
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]*")


def normalize_text(text: str) -> str:
    """Lowercase, single-spaced, stripped: how typed keywords and clicked texts are compared."""
    return _SPACES.sub(" ", text).strip().lower()


def price_tag(product: Product) -> str:
    """The price as the original shows it: ``$10.99`` or ``$10.99 to $15.99``."""
    prices = product.pricing[:2]
    return " to ".join(f"${round(price, 2)}" for price in prices) if prices else "$100.0"


def goal_splits(num_goals: int) -> TaskSplits:
    """The task splits of ``num_goals`` goals: the original's 500 test and 1,000 dev goals, the rest train.

    A catalog with at most 1,500 goals (a small test catalog) gets a third of them for
    test, a third for dev and the rest for train.
    """
    if num_goals > TEST_GOALS + DEV_GOALS:
        return TaskSplits(train=num_goals - TEST_GOALS - DEV_GOALS, dev=DEV_GOALS, test=TEST_GOALS)
    test = dev = num_goals // 3
    return TaskSplits(train=num_goals - test - dev, dev=dev, test=test)


#: What a ranged product costs at ``buy now`` (see :meth:`Shop.charged_price` and docs/webshop.md).
PRICE_MODES = ("low", "drawn")


class Shop:
    """A catalog, its search index and its goals: the read-only part every session shares.

    ``product(i)`` and ``search(keywords)`` are memoised in bounded LRU caches (shared,
    so memory does not grow with sessions or episodes).
    """

    def __init__(self, catalog: Catalog, index: SearchIndex) -> None:
        self.catalog = catalog
        self.index = index
        self.goals: list[Goal] = list(catalog.goals())
        self.splits = goal_splits(len(self.goals))
        self.product: Callable[[int], Product] = lru_cache(maxsize=1024)(catalog.product)
        self._search = lru_cache(maxsize=2048)(self._search_uncached)

    @property
    def name(self) -> str:
        return self.catalog.name

    def _search_uncached(self, keywords: str) -> tuple[int, ...]:
        return tuple(self.index.search(keywords, SEARCH_RETURN_N))

    def search(self, keywords: str) -> tuple[int, ...]:
        """The indices of the (at most 50) products found for ``keywords``, best first."""
        return self._search(normalize_text(keywords))

    def index_of(self, asin: str) -> int:
        return self.catalog.index_of(asin)

    def charged_price(self, index: int, mode: str = "low") -> float:
        """What buying product ``index`` costs: ``"low"``, the single price or the low end of
        a range; ``"drawn"``, the catalog's seeded draw in the range (``catalog.drawn_price``,
        as the original's ``generate_product_prices``). See :data:`PRICE_MODES`."""
        if mode == "low":
            return self.product(index).price
        if mode == "drawn":
            draw = getattr(self.catalog, "drawn_price", None)
            if draw is None:
                raise ValueError(f"catalog {self.name!r} has no drawn_price(index): use price='low'")
            return draw(index)
        raise ValueError(f"price must be one of {PRICE_MODES}, got {mode!r}")

    def goal_index(self, task_id: int) -> int:
        """The goal a task id plays: task ids run train, dev, test; goals run test, dev, train."""
        split = self.splits.split_of(task_id)
        offset = task_id - self.splits.ids(split).start
        return {"test": 0, "dev": self.splits.test, "train": self.splits.test + self.splits.dev}[split] + offset

    def task_id(self, goal_index: int) -> int:
        """The task id that plays goal ``goal_index`` (the inverse of :meth:`goal_index`)."""
        splits = self.splits
        if not 0 <= goal_index < splits.total:
            raise ValueError(f"goal index {goal_index} is outside 0..{splits.total - 1}")
        if goal_index < splits.test:
            return splits.ids("test").start + goal_index
        if goal_index < splits.test + splits.dev:
            return splits.ids("dev").start + goal_index - splits.test
        return goal_index - splits.test - splits.dev


_SHOPS: dict[str, Shop] = {}
_SHOPS_LOCK = threading.Lock()


def resolve_catalog(
    catalog: Catalog | str | os.PathLike[str] | None = None, num_products: int | None = None
) -> Catalog:
    """The catalog an env's ``catalog``/``num_products`` kwargs name.

    ``None`` means ``$WEBSHOP_DATA`` if set, else the generated catalog; a string is a source
    for ``catalog.load_catalog`` (``"generated:100k"``, a folder of the original files ...),
    which also gets ``num_products`` (the generated catalog's size, or how many of the
    original products to keep); any other object is taken as a
    :class:`~agentgym.environments.webshop.data.Catalog` as it is.
    """
    from agentgym.environments.webshop.catalog import load_catalog

    if catalog is None:
        catalog = os.environ.get("WEBSHOP_DATA") or None
    if catalog is None or isinstance(catalog, (str, os.PathLike)):
        return load_catalog(catalog, num_products=num_products)
    if num_products is not None:
        raise ValueError("num_products cannot resize a given catalog object")
    return catalog


def load_shop(
    catalog: Catalog | str | os.PathLike[str] | None = None,
    num_products: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Shop:
    """The process-wide :class:`Shop` of a catalog (see :func:`resolve_catalog`), made on first use.

    Shops are keyed by the catalog's ``name``: every env of the process that plays the same
    catalog shares one shop, whose search index is loaded from ``cache_dir`` (see
    :func:`~agentgym.environments.webshop.search.cache_root`) or built there first.
    """
    resolved = resolve_catalog(catalog, num_products)
    with _SHOPS_LOCK:
        shop = _SHOPS.get(resolved.name)
        if shop is None:
            shop = _SHOPS[resolved.name] = Shop(resolved, shared_index(resolved, cache_dir))
        return shop


def prepare(env_id: str, kwargs: Mapping[str, Any], report: Callable[[str], None]) -> None:
    """The family's one-time preparation (``register(..., prepare=...)``): load the id's catalog and
    build its search index into the cache if it is not there (seconds to minutes, by catalog size)."""
    started = time.perf_counter()
    report("loading the catalog and its search index (built on first use) ...")
    shop = load_shop(kwargs.get("catalog"), kwargs.get("num_products"), kwargs.get("cache_dir"))
    report(f"catalog {shop.name} ready in {time.perf_counter() - started:.1f} s")


@dataclass
class Purchase:
    """What was bought and how it scored."""

    asin: str
    options: dict[str, str]
    price: float
    reward: float
    breakdown: dict[str, Any]


@dataclass
class Session:
    """One visitor of the shop working on ``goal`` (see the module docstring)."""

    shop: Shop = field(repr=False)
    goal: Goal = field(repr=False)
    show_attributes: bool = True
    price: str = "low"  # one of PRICE_MODES
    tagger: NounTagger | None = field(default=None, repr=False)  # None: reward.noun_tagger("auto")
    page: str = SEARCH
    keywords: str = ""
    results: tuple[int, ...] = ()
    page_number: int = 1
    product_index: int | None = None
    options: dict[str, str] = field(default_factory=dict)
    visited: set[str] = field(default_factory=set)
    purchase: Purchase | None = None

    # ---- state --------------------------------------------------------------------------

    @property
    def instruction(self) -> str:
        return self.goal.instruction_text

    @property
    def done(self) -> bool:
        return self.page == DONE

    @property
    def product(self) -> Product | None:
        return None if self.product_index is None else self.shop.product(self.product_index)

    def page_results(self) -> list[Product]:
        """The products shown on the current results page."""
        start = (self.page_number - 1) * PAGE_SIZE
        return [self.shop.product(i) for i in self.results[start : start + PAGE_SIZE]]

    def _buttons(self) -> list[str]:
        if self.page == RESULTS:
            buttons = [BACK_TO_SEARCH]
            if self.page_number > 1:
                buttons.append(PREV_PAGE)
            if self.page_number * PAGE_SIZE < len(self.results):
                buttons.append(NEXT_PAGE)
            return buttons + [product.asin.lower() for product in self.page_results()]
        if self.page == ITEM:
            subs = [name for name in SUB_PAGES if name != "attributes" or self.show_attributes]
            return [BACK_TO_SEARCH, PREV_PAGE, *subs, BUY_NOW]
        if self.page in SUB_PAGES:
            return [BACK_TO_SEARCH, PREV_PAGE]
        return []

    def _option_groups(self) -> dict[str, str]:
        """Option value -> the option it selects (the last option offering it, as the original)."""
        product = self.product
        if self.page != ITEM or product is None:
            return {}
        groups: dict[str, str] = {}
        for name, values in product.options.items():
            for value in values:
                groups[normalize_text(value)] = name
        return groups

    def clickables(self) -> list[str]:
        """What ``click[...]`` accepts now: buttons and product links first, then option values."""
        buttons = self._buttons()
        seen = set(buttons)
        values = [value for value in self._option_groups() if value not in seen]
        return buttons + values

    def available_actions(self) -> dict[str, Any]:
        """``{"has_search_bar": bool, "clickables": [...]}``, as the original text env returns."""
        return {"has_search_bar": self.page == SEARCH, "clickables": self.clickables()}

    # ---- actions ------------------------------------------------------------------------

    def act(self, command: str) -> str:
        """Play ``search[...]`` or ``click[...]`` and return feedback; raise InvalidAction if it cannot be played."""
        match = _COMMAND.match(command)
        if match is None:
            raise InvalidAction(
                "expected search[keywords] or click[button text]; " + self._availability_hint(),
            )
        verb, argument = match.group(1).lower(), match.group(2)
        return self.search(argument) if verb == "search" else self.click(argument)

    def search(self, keywords: str) -> str:
        if self.done:
            raise InvalidAction("the purchase is done")
        if self.page != SEARCH:
            raise InvalidAction(f"there is no search bar on this page; click[{BACK_TO_SEARCH}] first")
        keywords = normalize_text(keywords)
        if not keywords:
            raise InvalidAction("search[...] needs keywords, e.g. search[red running shoes]")
        self.keywords, self.results, self.page_number = keywords, self.shop.search(keywords), 1
        self.page, self.product_index, self.options = RESULTS, None, {}
        return f"You searched for {quote(keywords)}."

    def click(self, text: str) -> str:
        if self.done:
            raise InvalidAction("the purchase is done")
        target = self._resolve(text)
        if target == BACK_TO_SEARCH:
            self.page, self.keywords, self.results, self.page_number = SEARCH, "", (), 1
            self.product_index, self.options, self.visited = None, {}, set()
        elif target == NEXT_PAGE:
            self.page_number += 1
        elif target == PREV_PAGE:
            if self.page == RESULTS:
                self.page_number -= 1
            elif self.page == ITEM:
                self.page, self.product_index, self.options = RESULTS, None, {}
            else:
                self.page = ITEM
        elif target in SUB_PAGES:
            self.page = target
        elif target == BUY_NOW:
            return self._buy()
        elif self.page == RESULTS:
            product = next(p for p in self.page_results() if p.asin.lower() == target)
            self.product_index = self.shop.index_of(product.asin)
            self.page, self.options = ITEM, {}
            self.visited.add(product.asin)
        else:
            name = self._option_groups()[target]
            self.options[name] = target
            return f"You selected {name}: {target}."
        return f"You clicked {quote(LABELS.get(target, target))}."

    def _resolve(self, text: str) -> str:
        clickables = self.clickables()
        wanted = normalize_text(text)
        if wanted in clickables:
            return wanted
        squeezed = wanted.replace(" ", "")
        for clickable in clickables:
            if clickable.replace(" ", "") == squeezed:
                return clickable
        if not wanted:
            raise InvalidAction("click[...] needs a button text; " + self._availability_hint())
        raise InvalidAction(f"{quote(text)} is not clickable on this page; " + self._availability_hint())

    def _availability_hint(self) -> str:
        if self.done:
            return "the purchase is done"
        parts = []
        if self.page == SEARCH:
            parts.append("search[keywords] (the search bar)")
        clickables = self.clickables()
        if clickables:
            parts.append("click[x] for x in: " + ", ".join(clickables))
        return "available: " + "; ".join(parts)

    def _buy(self) -> str:
        product = self.product
        assert product is not None
        options = dict(self.options)
        assert self.product_index is not None
        price = self.shop.charged_price(self.product_index, self.price)
        tagger = self.tagger if self.tagger is not None else noun_tagger("auto")
        reward, breakdown = get_reward(product, self.goal, price, options, tagger)
        breakdown["price"] = price
        breakdown["price_mode"] = self.price
        self.purchase = Purchase(product.asin, options, price, reward, breakdown)
        self.page = DONE
        return f"You bought {product.asin} for {price_tag(product)}; your score is {reward:.3f}."

    # ---- scripted players ---------------------------------------------------------------

    def oracle_action(self) -> str:
        """The command that heads for the goal's product from here, picks the goal's options and buys.

        On the search page: the first of (the goal's query with its attributes and option
        values; the target's title; both together) whose results hold the target, else the
        title. On a results page: the target's link, ``next >``/``< prev`` towards its page,
        or ``back to search`` if the results lack it. On another product: ``< prev``. On the
        target: each goal option not yet selected, then ``buy now``.
        """
        target = self.shop.index_of(self.goal.asin)
        if self.page == SEARCH:
            return f"search[{self._oracle_query(target)}]"
        if self.page == RESULTS:
            if target not in self.results:
                return f"click[{BACK_TO_SEARCH}]"
            page = self.results.index(target) // PAGE_SIZE + 1
            if page == self.page_number:
                return f"click[{self.goal.asin.lower()}]"
            return f"click[{NEXT_PAGE if page > self.page_number else PREV_PAGE}]"
        if self.page in SUB_PAGES:
            return f"click[{PREV_PAGE}]"
        if self.page == ITEM and self.product_index == target:
            product, groups = self.product, self._option_groups()
            assert product is not None
            for name, wanted in self.goal.goal_options.items():
                value = self._option_value(name, wanted)
                group = groups.get(value) if value is not None else None
                if group is None or self.options.get(group) == value:
                    continue
                if group == name or name not in product.options:  # else the click would select another option
                    return f"click[{value}]"
            return f"click[{BUY_NOW}]"
        return f"click[{PREV_PAGE}]"

    def oracle_queries(self) -> list[str]:
        """The searches the oracle tries, in order."""
        goal = self.goal
        keywords = " ".join([goal.query, *goal.attributes, *goal.goal_options.values()])
        return [normalize_text(q) for q in (keywords, goal.name, f"{goal.name} {keywords}") if normalize_text(q)]

    def _oracle_query(self, target: int) -> str:
        queries = self.oracle_queries() or [self.goal.asin]
        for query in queries:
            if target in self.shop.search(query):
                return query
        return queries[min(1, len(queries) - 1)]

    def _option_value(self, name: str, wanted: str) -> str | None:
        """The product's option value (normalised) that best answers the goal's ``name: wanted``."""
        product = self.product
        if product is None:
            return None
        wanted = normalize_text(wanted)
        own = [normalize_text(value) for value in product.options.get(name, ())]
        if wanted in own:
            return wanted
        every = [normalize_text(value) for values in product.options.values() for value in values]
        if wanted in every:
            return wanted
        pool = own or every
        if not pool:
            return None
        best = max(pool, key=lambda value: token_set_ratio(value, wanted))
        return best if token_set_ratio(best, wanted) > 0 else None

    def random_action(self, rng: random.Random) -> str:
        """A random clickable, or on the search page a search for 1-4 random words of the instruction."""
        if self.page == SEARCH:
            words = _WORDS.findall(_PRICE_CLAUSE.sub("", self.instruction)) or ["shop"]
            return f"search[{' '.join(rng.sample(words, min(len(words), rng.randint(1, 4))))}]"
        clickables = self.clickables()
        return f"click[{rng.choice(clickables)}]" if clickables else f"click[{BUY_NOW}]"

    # ---- rendering ----------------------------------------------------------------------

    def render(self, mode: str = "text") -> str:
        """The current page as ``text``, ``text_rich`` or ``html`` (see the module docstring)."""
        if mode == "html":
            return self.render_html()
        simple = mode == "text"
        parts = self._texts()
        if simple:
            return SEP.join(text for text, _ in parts)
        lines, clicked = [], []
        for text, kind in parts:
            if kind == "button":
                lines.append(f"[button] {text} [button_]")
            elif kind == "option":
                if self.options.get(self._option_groups().get(normalize_text(text), "")) == normalize_text(text):
                    lines.append(f"  [clicked button] {text} [clicked button_]")
                    clicked.append(f"You have clicked {text}.")
                else:
                    lines.append(f"  [button] {text} [button_]")
            elif kind == "link":
                marker = "clicked button" if text in self.visited else "button"
                lines.append(f"\n[{marker}] {text} [{marker}_]")
            else:
                lines.append(text)
        return "\n".join(clicked + lines)

    def _texts(self) -> list[tuple[str, str]]:
        """The page's visible texts in order, each with its kind: text, button, link or option."""
        instruction = [("Instruction:", "text"), (self.instruction, "text")]
        if self.page == SEARCH:
            return [("WebShop", "text"), *instruction, ("Search", "button")]
        if self.page == DONE:
            assert self.purchase is not None
            return [
                ("Thank you for shopping with us!", "text"),
                ("Your score (min 0.0, max 1.0)", "text"),
                (f"{self.purchase.reward}", "text"),
            ]
        parts = [*instruction, *((LABELS[button], "button") for button in self._buttons() if button in LABELS)]
        if self.page == RESULTS:
            parts.insert(3, (f"Page {self.page_number} (Total results: {len(self.results)})", "text"))
            for product in self.page_results():
                parts += [(product.asin, "link"), (product.title, "text"), (price_tag(product), "text")]
            return parts
        product = self.product
        assert product is not None
        if self.page == ITEM:
            head, tail = parts[:4], parts[4:]  # instruction and the two navigation buttons; the rest follow the title
            body: list[tuple[str, str]] = []
            for name, values in product.options.items():
                body.append((name, "text"))
                body += [(value, "option") for value in values]
            body += [
                (product.title, "text"),
                (f"Price: {price_tag(product)}", "text"),
                (f"Rating: {'N.A.' if product.rating is None else product.rating}", "text"),
            ]
            return head + body + tail
        if self.page == "description":
            return parts + [(product.description, "text")]
        if self.page == "features":
            return parts + [(bullet, "text") for bullet in product.bullet_points]
        if self.page == "reviews":
            if not product.reviews:
                return parts + [("No reviews found", "text")]
            for review in product.reviews:
                parts += [(f'"{review.title}"', "text"), (str(review.score), "text"), (review.body, "text")]
            return parts
        return (
            parts
            + [(attribute, "text") for attribute in product.attributes]
            + [
                (product.category, "text"),
                (product.query, "text"),
                (product.product_category, "text"),
            ]
        )

    def render_html(self) -> str:
        """The current page as HTML (ids and classes of the original templates).

        Every clickable carries ``data-action`` with its command; buttons sit in a
        ``<form method="post">`` with a hidden ``action`` input, the search bar is the
        input ``search_query``, so a web front end can post what a visitor clicks or types.
        """
        esc = html.escape
        body = [f'<div id="instruction-text"><h4>Instruction:<br>{esc(self.instruction)}</h4></div>']
        if self.page == SEARCH:
            body.insert(0, '<div id="logo"><h2>WebShop</h2></div>')
            body.append(
                '<form method="post"><input id="search_input" type="text" name="search_query" '
                'placeholder="Search..." required><button class="btn btn-success" type="submit">Search</button></form>'
            )
        elif self.page == DONE:
            assert self.purchase is not None
            body = [
                '<div id="thankyou"><h1>Thank you for shopping with us!</h1></div>',
                f'<h3 id="reward">Your score (min 0.0, max 1.0)<pre>{self.purchase.reward}</pre></h3>',
            ]
        else:
            buttons = [_button_html(LABELS[button]) for button in self._buttons() if button in LABELS]
            if self.page == RESULTS:
                body += buttons[:1]
                body.append(f"<p>Page {self.page_number} (Total results: {len(self.results)})</p>")
                body += buttons[1:]
                for product in self.page_results():
                    asin = esc(product.asin)
                    body.append(
                        f'<div class="grid-item"><h4 class="product-asin"><a class="product-link" href="#" '
                        f'data-action="click[{asin.lower()}]">{asin}</a></h4>'
                        f'<h4 class="product-title">{esc(product.title)}</h4>'
                        f'<h5 class="product-price">{esc(price_tag(product))}</h5></div>'
                    )
            elif self.page == ITEM:
                body += buttons[:2] + [self._product_html()] + buttons[2:]
            else:
                body += buttons + [self._product_html()]
        page = "\n".join(body)
        return f"<!DOCTYPE html>\n<html><head><title>WebShop</title></head><body>\n{page}\n</body></html>"

    def _product_html(self) -> str:
        esc = html.escape
        product = self.product
        assert product is not None
        if self.page == ITEM:
            options = []
            for name, values in product.options.items():
                radios = []
                for position, value in enumerate(values):
                    checked = " checked" if self.options.get(name) == normalize_text(value) else ""
                    radios.append(
                        f'<input type="radio" id="radio_{esc(name)}{position}" name="{esc(name)}" value="{esc(value)}" '
                        f'data-action="{esc(f"click[{normalize_text(value)}]")}"{checked}>'
                        f'<label for="radio_{esc(name)}{position}">{esc(value)}</label>'
                    )
                options.append(f'<div class="radio-toolbar"><h4>{esc(name)}</h4>{"".join(radios)}</div>')
            rating = "N.A." if product.rating is None else product.rating
            return (
                "".join(options)
                + f"<h2>{esc(product.title)}</h2><h4>Price: {esc(price_tag(product))}</h4><h4>Rating: {rating}</h4>"
            )
        if self.page == "description":
            return f'<p class="product-info">{esc(product.description)}</p>'
        if self.page == "features":
            return "<ul>" + "".join(f"<li><p>{esc(bullet)}</p></li>" for bullet in product.bullet_points) + "</ul>"
        if self.page == "reviews":
            if not product.reviews:
                return "<h4>No reviews found</h4>"
            return "".join(
                f'<div class="card"><h4>"{esc(r.title)}"</h4><p><span>{r.score}</span></p>'
                f'<p class="content">{esc(r.body)}</p></div>'
                for r in product.reviews
            )
        items = "".join(f'<li><p class="attribute">{esc(a)}</p></li>' for a in product.attributes)
        return (
            f'<ul>{items}</ul><h5 class="product-category">{esc(product.category)}</h5>'
            f'<h5 class="product-query">{esc(product.query)}</h5>'
            f'<h5 class="product-product_category">{esc(product.product_category)}</h5>'
        )


def _button_html(label: str) -> str:
    command = html.escape(f"click[{label.lower()}]")
    return (
        f'<form method="post"><input type="hidden" name="action" value="{command}">'
        f'<button type="submit" class="btn btn-primary" data-action="{command}">{html.escape(label)}</button></form>'
    )
