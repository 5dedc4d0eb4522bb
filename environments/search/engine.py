"""The search tools over any corpus: ``search``, ``open`` with pages, ``find``, ``answer``.

:class:`SearchToolsEnv` is the part the generated world (:mod:`.env`) and a user's
Search-R1 corpus (:mod:`.corpus`) share. A subclass supplies a :class:`Corpus` (titles and
texts by document index, document ids, a BM25 index) and, per task, the question and its
gold answers.

Actions (text, one per reply, or the function tools of ``tools.yaml``; Search-R1's
``<search>QUERY</search>`` and ``<answer>TEXT</answer>`` tags are read too):

* ``search[QUERY]`` or ``search[QUERY; k=K]``: the ``K`` (default 5, at most 20) best
  documents by BM25, each as ``[doc id] title: snippet`` (the snippet is the passage of the
  document that shares the most terms with the query).
* ``open[DOC_ID]`` or ``open[DOC_ID; page=P]``: a page of a document (pages hold whole
  paragraphs, about 1,500 characters); the view says which page of how many.
* ``find[TEXT]``: where ``TEXT`` occurs in the open document (case-insensitive), with the
  page of each occurrence and its context, at most 5.
* ``answer[TEXT]``: the final answer; the episode ends.

Reward: on ``answer``, the score is the exact match (1 or 0) of the answer against the gold
answers after SQuAD's normalisation (:mod:`.scoring`), as Search-R1 rewards; ``success`` is
the exact match. ``info`` then carries ``exact_match``, ``f1`` and ``answer``; every step's
``info`` carries ``searches`` and ``reads`` (documents opened, counting each page).
Termination: the answer. Truncation: the registered step limit.
"""

from __future__ import annotations

import abc
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentgym.contract.core import InvalidAction, TextEnv, quote
from agentgym.environments.search.scoring import exact_match, token_f1
from agentgym.retrieval import tokenize
from agentgym.utils.text import strip_thinking

DEFAULT_K, MAX_K = 5, 20
PAGE_CHARS = 1500
SNIPPET_CHARS = 220
MAX_FIND_RESULTS = 5
MAX_ANSWER_CHARS = 500

_SEARCH = re.compile(r"search\s*\[(?P<query>.*?)(?:;\s*k\s*=\s*(?P<k>\d+)\s*)?\]", re.IGNORECASE | re.DOTALL)
_OPEN = re.compile(r"open\s*\[\s*(?P<doc>[^;\]]*?)\s*(?:;\s*page\s*=\s*(?P<page>\d+)\s*)?\]", re.IGNORECASE)
_FIND = re.compile(r"find\s*\[(?P<text>.*)\]", re.IGNORECASE | re.DOTALL)
_SEARCH_R1_TAG = re.compile(r"<(search|answer)>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_ANSWER = re.compile(r"answer\s*\[(?P<text>.*)\]", re.IGNORECASE | re.DOTALL)


class Retriever(Protocol):
    """What the tools need of an index: :class:`~agentgym.retrieval.BM25Index` or ``DenseIndex``."""

    def search(self, query: str, k: int = 10) -> list[int]: ...


class Corpus(Protocol):
    """What the tools need of a corpus."""

    num_docs: int

    def title(self, doc: int) -> str: ...

    def text(self, doc: int) -> str: ...

    def doc_id(self, doc: int) -> str: ...

    def doc_index(self, doc_id: str) -> int | None: ...


@dataclass
class _Episode:
    """What the agent has done in this episode."""

    results: list[int] = field(default_factory=list)
    last_query: str | None = None
    open_doc: int | None = None
    pages: list[str] = field(default_factory=list)
    page: int = 0
    last_find: tuple[int, str, bool] | None = None  # (document, text, found)
    searches: int = 0
    reads: int = 0
    answer: str | None = None
    exact_match: float = 0.0
    f1: float = 0.0


def paginate(text: str, page_chars: int = PAGE_CHARS) -> list[str]:
    """Split a document into pages of whole paragraphs (a longer paragraph is cut at spaces)."""
    pages: list[str] = []
    current = ""
    for paragraph in text.split("\n\n"):
        while len(paragraph) > page_chars:
            cut = paragraph.rfind(" ", 0, page_chars)
            cut = cut if cut > 0 else page_chars
            if current:
                pages.append(current)
                current = ""
            pages.append(paragraph[:cut])
            paragraph = paragraph[cut:].lstrip()
        if current and len(current) + 2 + len(paragraph) > page_chars:
            pages.append(current)
            current = paragraph
        else:
            current = f"{current}\n\n{paragraph}" if current else paragraph
    if current or not pages:
        pages.append(current)
    return pages


def snippet(text: str, query: str, limit: int = SNIPPET_CHARS) -> str:
    """The sentence (or line) of ``text`` holding the most of ``query``'s terms, cut to ``limit`` characters.

    A term counts when its stem occurs in the lowercased sentence (stems are prefixes of the
    words they come from), which is fast enough to run on every result of every search.
    """
    terms = set(tokenize(query))
    best, best_overlap = "", -1
    for sentence in _SENTENCE_END.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        lowered = sentence.lower()
        overlap = sum(term in lowered for term in terms)
        if overlap > best_overlap:
            best, best_overlap = sentence, overlap
    return best if len(best) <= limit else best[: limit - 1].rstrip() + "…"


class SearchToolsEnv(TextEnv):
    """Question answering with search tools over a corpus; see the module docstring."""

    def __init__(self, page_chars: int = PAGE_CHARS, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        if page_chars < 200:
            raise ValueError("page_chars must be at least 200")
        self.page_chars = page_chars
        self.question = ""
        self.gold: list[str] = []
        self.episode = _Episode()

    # ---- what a subclass supplies ---------------------------------------------------

    @property
    @abc.abstractmethod
    def corpus(self) -> Corpus:
        """The documents."""

    @property
    @abc.abstractmethod
    def index(self) -> Retriever:
        """The index over :attr:`corpus` (BM25, or dense when the env names an embedding model)."""

    @abc.abstractmethod
    def _question(self, task_id: int) -> tuple[str, list[str]]:
        """Task ``task_id``'s question and its gold answers."""

    # ---- the contract ---------------------------------------------------------------

    def extract_action(self, reply: str) -> str:
        """The command in a reply: an ``Action:`` line as elsewhere, or Search-R1's tags.

        A reply whose last tag is ``<search>QUERY</search>`` or ``<answer>TEXT</answer>`` (the
        format Search-R1's models are trained to write) plays ``search[QUERY]`` or ``answer[TEXT]``.
        """
        tags = list(_SEARCH_R1_TAG.finditer(strip_thinking(reply)))
        if tags:
            last = tags[-1]
            return f"{last.group(1).lower()}[{last.group(2).strip()}]"
        return super().extract_action(reply)

    @property
    def action_syntax(self) -> str:
        return (
            "Actions (one per reply, e.g. 'Action: search[Valeby Bank founder]'):\n"
            f"  search[QUERY] or search[QUERY; k=K]: the K best documents (default {DEFAULT_K}, at most {MAX_K}), "
            "each as [doc id] title: snippet\n"
            "  open[DOC_ID] or open[DOC_ID; page=P]: read a document, page by page\n"
            "  find[TEXT]: where TEXT occurs in the open document, with page numbers\n"
            "  answer[TEXT]: give your final answer (a name, title or number; short) and end the episode"
        )

    def _generate(self, task_id: int) -> str:
        self.question, self.gold = self._question(task_id)
        self.episode = _Episode()
        return self._instruction()

    def _instruction(self) -> str:
        return f"Answer the question by searching the documents.\nQuestion: {self.question}"

    def _describe(self) -> str:
        episode = self.episode
        where = "no document open"
        if episode.open_doc is not None:
            where = f"open: {self.corpus.doc_id(episode.open_doc)}, page {episode.page + 1} of {len(episode.pages)}"
        return f"[searches: {episode.searches}, reads: {episode.reads}, {where}]"

    def _execute(self, command: str) -> str:
        for pattern, handler in (
            (_SEARCH, self._search),
            (_OPEN, self._open),
            (_FIND, self._find),
            (_ANSWER, self._answer),
        ):
            match = pattern.fullmatch(command.strip())
            if match:
                return handler(match)
        raise InvalidAction("expected search[QUERY], open[DOC_ID], find[TEXT] or answer[TEXT].")

    def _search(self, match: re.Match[str]) -> str:
        query = match.group("query").strip()
        if not query:
            raise InvalidAction("the query is empty.")
        k = int(match.group("k")) if match.group("k") else DEFAULT_K
        if not 1 <= k <= MAX_K:
            raise InvalidAction(f"k must be between 1 and {MAX_K}.")
        episode = self.episode
        episode.searches += 1
        episode.last_query = query
        episode.results = self.index.search(query, k)
        if not episode.results:
            return f"No documents match {quote(query)}."
        corpus = self.corpus
        lines = [
            f"[{corpus.doc_id(doc)}] {corpus.title(doc)}: {snippet(corpus.text(doc), query)}" for doc in episode.results
        ]
        return f"Results for {quote(query)}:\n" + "\n".join(lines)

    def _open(self, match: re.Match[str]) -> str:
        doc_id = match.group("doc").strip().strip("'\"")
        doc = self.corpus.doc_index(doc_id)
        if doc is None:
            raise InvalidAction(f"there is no document {quote(doc_id)}; use an id shown in search results.")
        episode = self.episode
        if doc != episode.open_doc:
            episode.open_doc, episode.pages = doc, paginate(self.corpus.text(doc), self.page_chars)
        page = int(match.group("page")) if match.group("page") else 1
        if not 1 <= page <= len(episode.pages):
            raise InvalidAction(f"{doc_id} has pages 1 to {len(episode.pages)}.")
        episode.page = page - 1
        episode.reads += 1
        more = f" Next: open[{self.corpus.doc_id(doc)}; page={page + 1}]." if page < len(episode.pages) else ""
        return (
            f"{self.corpus.doc_id(doc)}: {self.corpus.title(doc)} (page {page} of {len(episode.pages)}).{more}\n\n"
            f"{episode.pages[episode.page]}"
        )

    def _find(self, match: re.Match[str]) -> str:
        text = match.group("text").strip()
        episode = self.episode
        if episode.open_doc is None:
            raise InvalidAction("no document is open; open[DOC_ID] one first.")
        if not text:
            raise InvalidAction("the text to find is empty.")
        needle, hits = text.lower(), []
        for number, page in enumerate(episode.pages, start=1):
            lowered, start = page.lower(), 0
            while len(hits) < MAX_FIND_RESULTS:
                position = lowered.find(needle, start)
                if position < 0:
                    break
                context = page[max(0, position - 80) : position + len(text) + 80].replace("\n", " ")
                hits.append(f"page {number}: …{context}…")
                start = position + len(needle)
        episode.last_find = (episode.open_doc, text, bool(hits))
        doc_id = self.corpus.doc_id(episode.open_doc)
        if not hits:
            return f"{quote(text)} does not occur in {doc_id}."
        return f"{quote(text)} in {doc_id}:\n" + "\n".join(hits)

    def _answer(self, match: re.Match[str]) -> str:
        answer = match.group("text").strip()[:MAX_ANSWER_CHARS]
        if not answer:
            raise InvalidAction("the answer is empty.")
        episode = self.episode
        episode.answer = answer
        episode.exact_match = exact_match(answer, self.gold)
        episode.f1 = token_f1(answer, self.gold)
        self.score = episode.exact_match
        self.success = episode.exact_match == 1.0
        self.terminated = True
        verdict = "correct" if self.success else "not correct"
        scores = f"exact match {episode.exact_match:g}, F1 {episode.f1:.2f}"
        return f"You answered {quote(answer)}: that is {verdict} ({scores})."

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        episode = self.episode
        info["searches"], info["reads"] = episode.searches, episode.reads
        if episode.answer is not None:
            info |= {"answer": episode.answer, "exact_match": episode.exact_match, "f1": round(episode.f1, 6)}
        return info
