"""Task templates for the web apps: WebArena's three kinds, instantiated from generated content.

A :class:`Template` (one per kind of task, e.g. "the price of a product") turns a site's
generated content and a random generator into a :class:`Task`; it knows how to solve the task
(:meth:`Template.oracle`, a plan of :data:`Step` s acted out through the env's own browser
commands) and how to check it against the application's real state (:meth:`Template.check`,
which reads the tenant's database or mailbox and the final page).

Kinds (WebArena's): ``info`` (the agent answers with ``answer("...")``; the answer is compared
with the value read from the app), ``navigation`` (the page the agent ends on is checked) and
``change`` (the app's state is checked for the requested change). Every episode ends with
``answer(...)`` (for navigation and change tasks the text is not scored).

Instruction texts are data: each site's ``templates.yaml`` maps a template id to its text, a
``str.format`` pattern over the task's ``params``.
"""

from __future__ import annotations

import abc
import hashlib
import random
import re
import string
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import yaml

if TYPE_CHECKING:
    from agentgym.environments.webapps.site import Site

T = TypeVar("T")
Kind = Literal["info", "navigation", "change"]

# ---- oracle plans: what the scripted solver does, step by step ----------------------------
#
# A target names one element of the page: a CSS selector (``"#id_q"``, ``"form.login button"``)
# or ``"text=Add to basket"`` (an element whose own text is exactly that, innermost first), with an
# optional ``" >> nth=2"`` suffix to take the third match. The env finds the element's id on the
# page as the agent sees it and plays the agent's command (``click(12)``), so the oracle proves
# a task solvable through the agent's own interface.


@dataclass(frozen=True)
class Goto:
    """Open ``path`` (with query) on ``site``'s copy of this env's tenant."""

    site: str
    path: str


@dataclass(frozen=True)
class Click:
    target: str


@dataclass(frozen=True)
class Fill:
    """Type ``text`` into the input ``target`` (replacing what it holds)."""

    target: str
    text: str


@dataclass(frozen=True)
class Choose:
    """Select ``option`` (its label or value) in the drop-down ``target``."""

    target: str
    option: str


@dataclass(frozen=True)
class Press:
    """Press ``key`` on the focused element (after a ``Fill``, the field just filled: ``Press("Enter")`` submits)."""

    key: str


@dataclass(frozen=True)
class Answer:
    """End the episode with ``text`` as the answer."""

    text: str


@dataclass(frozen=True)
class AnswerFromPage:
    """End the episode with the text of ``target`` on the current page (``pattern``: its first group)."""

    target: str
    pattern: str | None = None


Step = Goto | Click | Fill | Choose | Press | Answer | AnswerFromPage


# ---- tasks --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One task: what the agent is told, where it starts, and what the checker and oracle need."""

    template: str
    kind: Kind
    sites: tuple[str, ...]
    instruction: str
    #: The first page: (site, path).
    start: tuple[str, str]
    #: JSON-serialisable facts of this instance (what ``check`` and ``oracle`` read).
    params: Mapping[str, Any]
    #: Who the browser is logged in as on each site when the episode starts (site -> user name).
    logins: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    """How an episode ended: the agent's answer, the final page, and access to the tenant's state."""

    answer: str | None
    #: The URL of the page the agent ended on.
    url: str
    tenant: int
    sites: Mapping[str, Site]

    def path_on(self, site: str) -> str | None:
        """The final page's path and query if it is on ``site``'s copy of this tenant, else None."""
        base = self.sites[site].base_url(self.tenant)
        if self.url == base or self.url.startswith(base + "/"):
            return self.url[len(base) :] or "/"
        return None


class Picker:
    """Draws the parameters of one task: seeded, and with each split on its own part of the content.

    :meth:`choice` keeps the items whose key hashes into the split's share (train 8/10, dev and
    test 1/10 each), so a dev or test task asks about things no train task asks about. Pass
    ``shared=True`` for small collections (five categories) that every split may use.
    """

    _SHARES: ClassVar[dict[str, range]] = {"train": range(0, 8), "dev": range(8, 9), "test": range(9, 10)}

    def __init__(self, content: Mapping[str, Any], rng: random.Random, split: str) -> None:
        self.content, self.rng, self.split = content, rng, split

    def in_split(self, key: Any) -> bool:
        """Whether the item with ``key`` belongs to this picker's split."""
        bucket = int(hashlib.sha256(repr(key).encode()).hexdigest()[:8], 16) % 10
        return bucket in self._SHARES[self.split]

    def choice(self, items: Sequence[T], *, key: Callable[[T], Any] = repr, shared: bool = False) -> T:
        """One item of ``items`` (of this split's share unless ``shared``)."""
        pool = list(items) if shared else [item for item in items if self.in_split(key(item))]
        if not pool:
            raise ValueError(f"no item of this collection falls in the {self.split} split")
        return self.rng.choice(pool)

    def sample(
        self, items: Sequence[T], count: int, *, key: Callable[[T], Any] = repr, shared: bool = False
    ) -> list[T]:
        """``count`` distinct items (of this split's share unless ``shared``)."""
        pool = list(items) if shared else [item for item in items if self.in_split(key(item))]
        return self.rng.sample(pool, count)


class Template(abc.ABC):
    """One kind of task on one or more sites (see the module docstring).

    Subclasses set ``id`` (``"shop/product-price"``), ``kind`` and ``sites``, and implement
    :meth:`params`, :meth:`oracle` and :meth:`check`; change templates also implement
    :meth:`half_done`. The instruction is the ``id``'s text in ``text_file`` (beside the module),
    formatted with the params.
    """

    id: ClassVar[str]
    kind: ClassVar[Kind]
    sites: ClassVar[tuple[str, ...]]
    #: The YAML file of instruction texts, beside the template's module.
    text_file: ClassVar[str] = "templates.yaml"

    def instantiate(self, content: Mapping[str, Mapping[str, Any]], rng: random.Random, split: str) -> Task:
        """The task drawn with ``rng`` from ``content`` (site name -> that site's generated content)."""
        params, start, logins = self.params(Picker(content, rng, split))
        text = instruction_texts(type(self).__module__, self.text_file)[self.id]
        return Task(
            template=self.id,
            kind=self.kind,
            sites=self.sites,
            instruction=text.format(**params).strip(),
            start=start,
            params=params,
            logins=logins,
        )

    @abc.abstractmethod
    def params(self, pick: Picker) -> tuple[dict[str, Any], tuple[str, str], dict[str, str]]:
        """Draw one instance: (params, start page (site, path), logins (site -> user))."""

    @abc.abstractmethod
    def oracle(self, task: Task) -> list[Step]:
        """A plan that solves ``task`` from its start page."""

    @abc.abstractmethod
    def check(self, task: Task, outcome: Outcome) -> float:
        """The score in [0, 1] of ``outcome``, read from the app's real state (1.0: solved)."""

    def half_done(self, task: Task) -> list[Step] | None:
        """Change tasks: a plan that does part of the change and then answers (must score < 1)."""
        return None


@cache
def instruction_texts(module: str, file_name: str) -> dict[str, str]:
    """The instruction texts in ``file_name`` beside ``module`` (template id -> text)."""
    package = module.rpartition(".")[0]
    texts = yaml.safe_load(resources.files(package).joinpath(file_name).read_text())
    if not isinstance(texts, dict):
        raise ValueError(f"{package}/{file_name} must map template ids to texts")
    return texts


# ---- checking changes made by background requests ----------------------------------------

#: How long a change checker asks again while the change has not landed (see :func:`settled`).
SETTLE_S = 2.0


def settled(score: Callable[[], float], timeout_s: float | None = None) -> float:
    """``score()`` once it is 1.0, else its last value after asking again for ``timeout_s`` (default :data:`SETTLE_S`).

    Front ends save some changes with background requests (Misago's posts and likes, Roundcube's
    sending from a hidden frame). The env lets the page's network go quiet before it checks; a
    server may still be committing or delivering a moment later.
    """
    deadline = time.monotonic() + (SETTLE_S if timeout_s is None else timeout_s)
    while True:
        value = score()
        if value >= 1.0 or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


# ---- answers ------------------------------------------------------------------------------

_PUNCTUATION = str.maketrans("", "", string.punctuation.replace(".", "").replace("-", ""))
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def normalise(text: str) -> str:
    """Lower case, punctuation (but ``.`` and ``-``) dropped, whitespace collapsed, ending ``.`` dropped."""
    return " ".join(str(text).lower().translate(_PUNCTUATION).split()).rstrip(".")


def exact_match(answer: str | None, expected: str) -> bool:
    """The answer equals ``expected`` once both are normalised."""
    return answer is not None and normalise(answer) == normalise(expected)


def must_include(answer: str | None, expected: Sequence[str]) -> bool:
    """Every one of ``expected`` occurs in the answer (normalised)."""
    return answer is not None and all(normalise(item) in normalise(answer) for item in expected)


def fuzzy_match(answer: str | None, expected: str, *, threshold: float = 0.85) -> bool:
    """The normalised answer is ``expected`` up to small differences (similarity ratio >= ``threshold``)."""
    if answer is None:
        return False
    return SequenceMatcher(None, normalise(answer), normalise(expected)).ratio() >= threshold


def number_match(answer: str | None, expected: float, *, tolerance: float = 0.005) -> bool:
    """The answer holds exactly one number, equal to ``expected`` (to ``tolerance``; ``1,299.00`` reads 1299)."""
    if answer is None:
        return False
    numbers = _NUMBER.findall(answer)
    if len(numbers) != 1:
        return False
    return abs(float(numbers[0].replace(",", "")) - float(expected)) <= tolerance
