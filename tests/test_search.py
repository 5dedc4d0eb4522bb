"""The search family (environments/search) and the shared BM25 index (agentgym/retrieval).

A small world (2,000 people, 5,562 documents) keeps these tests fast; the registered ids'
default world is played by tests/test_contract.py and benchmarks/search.py; docs/search.md's
examples run in tests/test_docs.py.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import random
import re
import tracemalloc
from collections import Counter
from pathlib import Path

import gymnasium as gym
import pytest

import agentgym
from agentgym.environments.search.baselines import answer_prior, no_search_answer
from agentgym.environments.search.corpus import CorpusSearchEnv, SearchSetupError
from agentgym.environments.search.engine import paginate
from agentgym.environments.search.env import SearchEnv
from agentgym.environments.search.questions import DIFFICULTIES, KINDS
from agentgym.environments.search.scoring import exact_match, normalize_answer, token_f1
from agentgym.environments.search.world import World, WorldConfig
from agentgym.retrieval import BM25Index, shared_index, tokenize
from agentgym.retrieval.bm25 import K1, B, index_directory

SMALL = 2_000
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def search_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("search-cache")


@pytest.fixture(scope="session")
def small_envs(search_cache: Path) -> dict[str, SearchEnv]:
    return {difficulty: SearchEnv(difficulty, people=SMALL, cache_dir=str(search_cache)) for difficulty in DIFFICULTIES}


def play_oracle(env: SearchEnv, task_id: int) -> dict:
    env.reset(options={"task_id": task_id})
    for _ in range(100):
        *_, terminated, _, info = env.step(env.oracle_action())
        if terminated:
            return info
    raise AssertionError(f"the oracle did not answer task {task_id} in 100 steps")


# ---- the BM25 index -------------------------------------------------------------------

DOCS = [
    "The quick brown fox jumps over the lazy dog",
    "A fox, a fox and another fox in the brown forest",
    "Dogs are loyal; the dog sleeps",
    "Brown bread and butter",
    "Nothing relevant here at all, only words about weather and rain and clouds and sunshine",
]


def reference_bm25(query: str, docs: list[str]) -> list[float]:
    """Lucene's BM25 written out directly from the formula, for comparison."""
    tokenized = [tokenize(doc) for doc in docs]
    average = sum(map(len, tokenized)) / len(docs)
    scores = []
    for terms in tokenized:
        counts, score = Counter(terms), 0.0
        for term in tokenize(query):
            df = sum(term in other for other in tokenized)
            if not counts[term]:
                continue
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            score += idf * counts[term] * (K1 + 1) / (counts[term] + K1 * (1 - B + B * len(terms) / average))
        scores.append(score)
    return scores


@pytest.mark.parametrize("query", ["fox", "brown fox", "dog sleeping", "weather brown", "absent words"])
def test_bm25_matches_the_formula(tmp_path: Path, query: str) -> None:
    index = BM25Index.build(iter(DOCS), len(DOCS), tmp_path / "index", {"corpus": "hand"})
    expected = reference_bm25(query, DOCS)
    hits = index.search_hits(query, k=5)
    ranked = sorted((i for i, score in enumerate(expected) if score > 0), key=lambda i: (-expected[i], i))
    assert [hit.doc for hit in hits] == ranked
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.doc], rel=1e-5)


def test_tokenize_is_lucenes_english_analysis() -> None:
    assert tokenize("The Foxes were RUNNING, and jumped!") == ["fox", "were", "run", "jump"]


def _build_in_child(args: tuple[str, str]) -> tuple[int, int]:
    cache, name = args
    index = shared_index(name, lambda: iter(DOCS * 2000), len(DOCS) * 2000, cache_dir=cache)
    return index.meta["num_postings"], len(index.search("fox"))


def test_shared_index_is_one_object_and_builds_once_under_concurrency(tmp_path: Path) -> None:
    stale = tmp_path / "retrieval" / "bm25" / f".{index_directory('race', tmp_path).name}-killed"
    stale.mkdir(parents=True)  # a build killed half-way: removed by the next build
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.map(_build_in_child, [(str(tmp_path), "race")] * 2)
    assert results[0] == results[1] and results[0][1] == 10
    folders = [path.name for path in (tmp_path / "retrieval" / "bm25").iterdir() if path.is_dir()]
    assert len(folders) == 1 and not folders[0].startswith(".")  # no half-written copy left behind
    first = shared_index("race", lambda: iter(()), len(DOCS) * 2000, cache_dir=tmp_path)
    assert shared_index("race", lambda: iter(()), len(DOCS) * 2000, cache_dir=tmp_path) is first


# ---- scoring --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  an   Apple, a day! ", "apple day"),
        ("Theatre of the Anchor", "theatre of anchor"),  # 'the' inside 'Theatre' is no article
        ("U.S.A.", "usa"),
        ("1,873", "1873"),
    ],
)
def test_normalisation_is_squads(text: str, normal: str) -> None:
    assert normalize_answer(text) == normal


def test_exact_match_and_f1_on_hand_cases() -> None:
    assert exact_match("the Valeby Bank.", ["Valeby Bank"]) == 1.0
    assert exact_match("Valeby", ["Valeby Bank", "VB"]) == 0.0
    assert exact_match("vb", ["Valeby Bank", "VB"]) == 1.0
    # prediction "valeby bank ltd" vs gold "valeby bank": precision 2/3, recall 1 -> F1 0.8
    assert token_f1("Valeby Bank Ltd", "Valeby Bank") == pytest.approx(0.8)
    assert token_f1("nothing", "Valeby Bank") == 0.0


# ---- the world ------------------------------------------------------------------------


def test_world_is_deterministic_and_large_enough() -> None:
    first, second = World(WorldConfig(people=SMALL)), World(WorldConfig(people=SMALL))
    assert first.names == second.names
    for doc in (0, 100, 2500, first.num_docs - 1):
        assert first.document(doc) == second.document(doc)
    default = WorldConfig()
    assert sum(default.counts.values()) + default.secondary >= 100_000


def test_documents_vary_in_length_and_forum_posts_conflict(small_envs: dict[str, SearchEnv]) -> None:
    world = small_envs["medium"].world
    lengths = [len(world.document(doc).text) for doc in range(0, world.num_docs, 7)]
    assert min(lengths) < 300 and max(lengths) > 4 * 1500  # one-paragraph notes and multi-page articles
    forums = [
        doc
        for doc in range(world.secondary_offset, world.num_docs)
        if world.secondary[doc - world.secondary_offset][0] == "forum"
    ]
    assert forums
    for doc in forums[:50]:
        person = world.secondary[doc - world.secondary_offset][1]
        claimed = int(re.search(r"born in (\d+)", world.document(doc).text).group(1))
        assert claimed != world.fact("person", person, "birth_year")


# ---- questions, oracle, baselines, splits ---------------------------------------------


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTIES))
def test_oracle_solves_every_sampled_task_in_every_split(small_envs: dict[str, SearchEnv], difficulty: str) -> None:
    env = small_envs[difficulty]
    kinds, searches = Counter(), 0
    for split in ("train", "dev", "test"):
        ids = env.splits.ids(split)
        for task_id in ids[:: len(ids) // 25][:25]:
            info = play_oracle(env, task_id)
            assert info["success"] and info["score"] == 1.0 and info["exact_match"] == 1.0, (task_id, env.current)
            kinds[info["question_kind"]] += 1
            searches += info["searches"]
    assert set(kinds) == set(DIFFICULTIES[difficulty])
    assert searches >= sum(kinds.values())  # every question needed at least one search


def test_no_search_baseline_stays_near_chance(small_envs: dict[str, SearchEnv]) -> None:
    env = small_envs["medium"]
    prior = answer_prior(env.question_for(task_id) for task_id in env.splits.ids("train")[:1500])
    rng, by_kind = random.Random(0), {kind: [] for kind in KINDS}
    for task_id in env.splits.ids("test")[:600]:
        question = env.question_for(task_id)
        by_kind[question.kind].append(exact_match(no_search_answer(question, prior, rng), question.answer))
    rates = {kind: sum(hits) / len(hits) for kind, hits in by_kind.items()}
    print("no-search success by kind:", {kind: round(rate, 3) for kind, rate in rates.items()})
    for kind, rate in rates.items():
        if kind.startswith("comparison"):
            assert 0.3 < rate < 0.7  # one of the two named candidates: chance is 1/2
        elif kind == "count":
            assert rate < 0.25  # counts are drawn uniformly from 0..n (n = 4..8 works): chance at most 1/5
        else:
            assert rate < 0.1


def test_train_and_test_questions_touch_disjoint_subjects(small_envs: dict[str, SearchEnv]) -> None:
    env = small_envs["medium"]
    touched = {split: set() for split in ("train", "test")}
    for split in touched:
        for task_id in env.splits.ids(split)[:400]:
            question = env.question_for(task_id)
            touched[split].update(question.subjects)
            named = re.search(rf"\b{re.escape(question.answer)}\b", question.text)
            assert question.options or not named  # only comparisons name their answer
    assert touched["train"] and touched["test"] and not touched["train"] & touched["test"]


def test_questions_are_deterministic(search_cache: Path) -> None:
    first = SearchEnv("hard", people=SMALL, cache_dir=str(search_cache))
    second = SearchEnv("hard", people=SMALL, cache_dir=str(search_cache))
    assert [first.question_for(t) for t in range(0, 12_000, 997)] == [
        second.question_for(t) for t in range(0, 12_000, 997)
    ]


# ---- the tools ------------------------------------------------------------------------


def test_tools_in_text_and_as_function_calls(small_envs: dict[str, SearchEnv]) -> None:
    env = small_envs["easy"]
    env.reset(options={"task_id": 3})
    hop = env.current.hops[0]
    call = {"type": "function", "function": {"name": "search", "arguments": json.dumps({"query": hop.query, "k": 20})}}
    observation, _, _, _, info = env.step(call)
    assert info["tool_call"]["name"] == "search" and f"[doc{hop.doc}]" in observation and info["searches"] == 1
    observation, *_, info = env.step({"name": "open", "arguments": {"doc_id": f"doc{hop.doc}"}})
    assert "page 1 of" in observation and info["reads"] == 1
    observation, *_, info = env.step(f"Action: find[{hop.evidence}]")
    assert "does not occur" not in observation and not info["invalid_action"]
    observation, reward, terminated, _, info = env.step({"name": "answer", "arguments": {"text": "certainly wrong"}})
    assert terminated and reward == 0.0 and info["exact_match"] == 0.0 and info["success"] is False
    assert {tool["function"]["name"] for tool in env.tools()} == {"search", "open", "find", "answer"}


def test_long_documents_are_paged(small_envs: dict[str, SearchEnv]) -> None:
    env = small_envs["medium"]
    world = env.world
    long_doc = next(doc for doc in range(world.num_docs) if len(world.document(doc).text) > 5000)
    env.reset(options={"task_id": 0})
    pages = paginate(world.document(long_doc).text)
    assert len(pages) >= 3 and all(len(page) <= 1500 for page in pages)
    observation, *_ = env.step(f"open[doc{long_doc}; page=2]")
    assert f"(page 2 of {len(pages)})" in observation and pages[1] in observation
    earlier = "\n".join(pages[:-1]).lower()
    unique = next(
        pages[-1][i : i + 50] for i in range(len(pages[-1]) - 50) if pages[-1][i : i + 50].lower() not in earlier
    )
    observation, *_ = env.step(f"find[{unique}]")
    assert f"page {len(pages)}:" in observation and "page 1:" not in observation


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("open[doc99999999]", "there is no document"),
        ("find[anything]", "no document is open"),
        ("search[fox; k=50]", "k must be between"),
        ("search[]", "the query is empty"),
        ("answer[]", "the answer is empty"),
        ("look around", "expected search[QUERY]"),
    ],
)
def test_bad_actions_explain_themselves(small_envs: dict[str, SearchEnv], action: str, message: str) -> None:
    env = small_envs["easy"]
    env.reset(options={"task_id": 1})
    observation, reward, terminated, _, info = env.step(action)
    assert info["invalid_action"] and reward == 0.0 and not terminated and message in observation


def test_extra_env_copies_share_the_world_and_index(search_cache: Path, small_envs: dict[str, SearchEnv]) -> None:
    small_envs["medium"].reset(options={"task_id": 0})  # world and index already loaded
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    envs = [SearchEnv(people=SMALL, cache_dir=str(search_cache)) for _ in range(10)]
    for env in envs:
        env.reset(options={"task_id": 5})
    used = sum(stat.size_diff for stat in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    assert all(env.index is envs[0].index and env.world is envs[0].world for env in envs)
    assert used / len(envs) < 1_000_000, f"{used / len(envs):.0f} bytes per extra env"


def test_ids_are_registered() -> None:
    ids = {info.id: info for info in agentgym.list_envs() if info.family == "search"}
    assert set(ids) == {"Search-v0", "Search-Easy-v0", "Search-Hard-v0", "Search-Attack-v0"}
    assert gym.spec("Search-Hard-v0").kwargs.get("difficulty", "hard") == "hard" or ids["Search-Hard-v0"].kwargs == {
        "difficulty": "hard"
    }


# ---- the user's corpus (Search-R1's formats) ------------------------------------------

CORPUS = [
    {
        "id": "0",
        "contents": '"Evan Morris"\nEvan L. Morris (January 26, 1977 - July 9, 2015) was a lobbyist for Genentech.',
    },
    {
        "id": "1",
        "contents": '"Lake Tahoe"\nLake Tahoe is a large freshwater lake in the Sierra Nevada of the United States.',
    },
    {
        "id": "2",
        "contents": '"Genentech"\nGenentech is a biotechnology corporation founded in 1976 in South San Francisco.',
    },
]
QUESTIONS = [
    {
        "id": "test_0",
        "question": "which company did evan morris lobby for",
        "golden_answers": ["Genentech", "Genentech Inc."],
    },
    {"id": "test_1", "question": "in which mountains is lake tahoe", "golden_answers": ["Sierra Nevada"]},
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_user_corpus_in_search_r1_format(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    test = write_jsonl(tmp_path / "test.jsonl", QUESTIONS)
    env = CorpusSearchEnv(corpus=corpus, test=test, cache_dir=tmp_path / "cache")
    assert env.splits.counts() == {"train": 0, "dev": 0, "test": 2}
    observation, info = env.reset(options={"task_id": 0})
    assert "evan morris lobby" in observation
    observation, *_ = env.step("<think>I need to find Evan Morris.</think>\n<search> evan morris lobbyist </search>")
    assert observation.splitlines()[1].startswith("[0] Evan Morris: ")
    observation, *_ = env.step("open[0]")
    assert "lobbyist for Genentech" in observation
    *_, terminated, _, info = env.step("<think>Morris lobbied for Genentech.</think>\n<answer> Genentech Inc </answer>")
    assert terminated and info["success"] and info["f1"] == 1.0 and info["searches"] == 1 and info["reads"] == 1


def test_user_questions_from_search_r1_parquet(tmp_path: Path) -> None:
    parquet = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    rows = [
        {
            "data_source": "nq",
            "prompt": [{"role": "user", "content": "Answer the given question. ... Question: " + row["question"]}],
            "reward_model": {"style": "rule", "ground_truth": {"target": row["golden_answers"]}},
            "question": row["question"],
            "golden_answers": row["golden_answers"],
        }
        for row in QUESTIONS
    ]
    parquet.write_table(pyarrow.Table.from_pylist(rows), tmp_path / "test.parquet")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{**row, "id": f"p{i}"} for i, row in enumerate(CORPUS)])
    env = CorpusSearchEnv(
        corpus=corpus, train=tmp_path / "test.parquet", test=tmp_path / "test.parquet", cache_dir=tmp_path
    )
    env.reset(options={"task_id": 3})
    observation, *_ = env.step("search[lake tahoe; k=1]")
    assert "[p1] Lake Tahoe" in observation  # the corpus's own ids, not row numbers
    *_, info = env.step("answer[The Sierra Nevada]")
    assert info["success"]


def test_user_corpus_missing_files_say_what_to_provide(tmp_path: Path) -> None:
    with pytest.raises(SearchSetupError, match="corpus='path/to/wiki-18.jsonl'"):
        CorpusSearchEnv()
    with pytest.raises(SearchSetupError, match="does not exist"):
        CorpusSearchEnv(corpus=tmp_path / "missing.jsonl", test=tmp_path / "missing.jsonl")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"query": "no question field"}])
    with pytest.raises(SearchSetupError, match="lacks 'question' or 'golden_answers'"):
        CorpusSearchEnv(corpus=corpus, test=bad)


# ---- the dense retriever option (a tiny random encoder built offline stands in for e5) --------


def test_dense_retriever_ranks_by_inner_product(tmp_path: Path, tiny_model_path: Path) -> None:
    pytest.importorskip("torch")
    from agentgym.retrieval import Encoder, shared_dense_index

    corpus = write_jsonl(tmp_path / "corpus.jsonl", CORPUS)
    test = write_jsonl(tmp_path / "test.jsonl", QUESTIONS)
    env = CorpusSearchEnv(corpus=corpus, test=test, cache_dir=tmp_path, embedding_model=str(tiny_model_path))
    env.reset(options={"task_id": 1})
    index = env.index
    assert index.meta["model"] == str(tiny_model_path) and index.embeddings.shape[0] == len(CORPUS)
    encoder = Encoder(tiny_model_path)
    passages = encoder.encode([f"{title}\n{text}" for title, text in map(env.documents.record, range(len(CORPUS)))])
    query = encoder.encode(["lake in the mountains"], query=True)[0]
    expected = sorted(range(len(CORPUS)), key=lambda doc: (-float(passages[doc] @ query), doc))
    assert index.search("lake in the mountains", k=3) == expected
    observation, *_ = env.step("search[lake in the mountains; k=2]")
    assert f"[{expected[0]}] " in observation and f"[{expected[1]}] " in observation
    again = shared_dense_index(
        env.documents.name,
        lambda: iter(()),
        len(CORPUS),
        str(tiny_model_path),
        meta=env.documents.meta,
        cache_dir=tmp_path,
    )
    assert again is index
