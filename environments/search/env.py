"""Search over a generated encyclopedia: answer a question by searching, reading and finding.

Observation: the question and the tools at reset; after each action its result (ranked
results with snippets, a page of a document, the occurrences of a text, the verdict on the
answer) and a status line (searches, reads, the open document and page).

Action, reward, termination: see :mod:`agentgym.environments.search.engine` (``search``,
``open`` with pages, ``find``, ``answer``; the score is the answer's exact match after
SQuAD's normalisation, F1 in ``info``).

Tasks: task ``task_id`` draws a question kind uniformly from the difficulty's kinds
(``easy``: single facts and 2-hop bridges; ``medium``: every kind; ``hard``: 3-4 hop
bridges, 4-read comparisons and aggregations; :mod:`.questions`) and a question of that
kind about subjects of the task's split (train, dev, test subjects are disjoint;
:mod:`.world`). The world (111,080 documents by default) and its BM25 index are built once
per machine (the index cached under ``$AGENTGYM_CACHE``) and shared by every copy of the env
in a process. Retrieval is BM25, or dense with ``embedding_model=`` (a Hugging Face encoder's
folder or name; :mod:`agentgym.retrieval.dense`).

Oracle: a scripted searcher that follows the question's hop chain through the tools: for
each hop it searches the entity's name (k = 10), opens the article among the results, and
finds in it the sentence that states the fact; then it answers. If a search does not
return the article, or the article does not state the fact, it answers "unknown" and fails,
so a 100% oracle shows every answer is derivable with the tools.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any

from agentgym.environments.search import SPLITS
from agentgym.environments.search.engine import Retriever, SearchToolsEnv
from agentgym.environments.search.questions import DIFFICULTIES, Question, make_question
from agentgym.environments.search.world import World, WorldConfig, shared_world, source_digest
from agentgym.retrieval import shared_dense_index, shared_index

ORACLE_K = 20


class _WorldCorpus:
    """The world's documents as the tools see them (rendered on demand, the last few kept)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.num_docs = world.num_docs

    def title(self, doc: int) -> str:
        return self.world.title(doc)

    def text(self, doc: int) -> str:
        return self.world.document(doc).text

    def doc_id(self, doc: int) -> str:
        return self.world.doc_id(doc)

    def doc_index(self, doc_id: str) -> int | None:
        return self.world.doc_index(doc_id)


class SearchEnv(SearchToolsEnv):
    """Question answering over the generated encyclopedia; see the module docstring."""

    metadata = {**SearchToolsEnv.metadata, "inline_safe": True}
    splits = SPLITS

    def __init__(
        self,
        difficulty: str = "medium",
        people: int = WorldConfig.people,
        world_seed: int = 0,
        page_chars: int = 1500,
        cache_dir: str | None = None,
        embedding_model: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(page_chars, render_mode)
        self.embedding_model = embedding_model
        if difficulty not in DIFFICULTIES:
            raise ValueError(f"difficulty must be one of {sorted(DIFFICULTIES)}, got {difficulty!r}")
        self.difficulty = difficulty
        self.world_config = WorldConfig(people=people, seed=world_seed)
        self.cache_dir = cache_dir
        self.current: Question | None = None
        self._oracle_done = 0
        self.index  # noqa: B018 -- generate the world and load (or build) the index now, so reset and step stay fast

    @cached_property
    def world(self) -> World:
        return shared_world(self.world_config)

    @cached_property
    def corpus(self) -> _WorldCorpus:  # type: ignore[override]
        return _WorldCorpus(self.world)

    @cached_property
    def index(self) -> Retriever:  # type: ignore[override]
        world = self.world
        name, meta = f"search-world-{world.config.key}", {"world": world.config.key, "sources": source_digest()}
        if self.embedding_model:
            return shared_dense_index(
                name, world.texts, world.num_docs, self.embedding_model, meta=meta, cache_dir=self.cache_dir
            )
        return shared_index(name, world.texts, world.num_docs, meta=meta, cache_dir=self.cache_dir)

    def question_for(self, task_id: int) -> Question:
        """The question of task ``task_id`` (without playing it)."""
        rng = self.task_rng(task_id, self.difficulty, self.world_config.key)
        kind = rng.choice(DIFFICULTIES[self.difficulty])
        return make_question(self.world, kind, SPLITS.split_of(task_id), rng)

    def _question(self, task_id: int) -> tuple[str, list[str]]:
        self.current = self.question_for(task_id)
        self._oracle_done = 0
        return self.current.text, [self.current.answer]

    def _instruction(self) -> str:
        return (
            "Answer the question by searching the encyclopedia. Facts are as its articles state them; "
            "forum threads are unverified and may be wrong. Answer with the exact name, title or number only.\n"
            f"Question: {self.question}"
        )

    def _info(self, command: str, invalid: bool) -> dict:
        info = super()._info(command, invalid)
        if self.current is not None:
            info["question_kind"] = self.current.kind
        return info

    # ---- baselines ------------------------------------------------------------------

    def oracle_action(self) -> str:
        question, episode = self.current, self.episode
        if question is None or self.terminated:
            return "answer[unknown]"
        while self._oracle_done < len(question.hops):
            hop = question.hops[self._oracle_done]
            if episode.open_doc == hop.doc:
                if episode.last_find == (hop.doc, hop.evidence, True):
                    self._oracle_done += 1
                    continue
                if episode.last_find == (hop.doc, hop.evidence, False):
                    return "answer[unknown]"  # the article does not state the fact: the oracle fails
                return f"find[{hop.evidence}]"
            if hop.doc in episode.results:
                return f"open[{self.world.doc_id(hop.doc)}]"
            if episode.last_query == hop.query:
                return "answer[unknown]"  # the search does not find the article: the oracle fails
            return f"search[{hop.query}; k={ORACLE_K}]"
        return f"answer[{question.answer}]"

    def random_action(self, rng: random.Random) -> str:
        """Search for words of the question, open a random result, or answer a random entity's name."""
        episode = self.episode
        roll = rng.random()
        if roll < 0.4 or not episode.results:
            words = self.question.rstrip("?").split()
            return f"search[{' '.join(rng.sample(words, min(3, len(words))))}]"
        if roll < 0.8:
            return f"open[{self.world.doc_id(rng.choice(episode.results))}]"
        entity_type = rng.choice(sorted(self.world.names))
        return f"answer[{rng.choice(self.world.names[entity_type])}]"


def prepare(env_id: str, kwargs: Mapping[str, Any], report: Callable[[str], None]) -> None:
    """The family's one-time preparation (``register(..., prepare=...)``): generate the id's world and build
    its search index into the cache if it is not there (about half a minute of CPU when cold), before any
    episode's timeout starts."""
    started = time.perf_counter()
    report("generating the world and loading its search index (built on first use) ...")
    SearchEnv(**kwargs).close()
    report(f"world and index ready in {time.perf_counter() - started:.1f} s")
