"""Search over the user's own corpus and questions, in Search-R1's formats.

Search-R1 (and FlashRAG, whose data it uses) distributes:

* a corpus as JSONL, one passage a line: ``{"id": "0", "contents": "\\"Evan Morris\\"\\nEvan L.
  Morris (January 26, 1977 ...) was ..."}``: the title in quotes on the first line, the text
  after it (``wiki-18.jsonl``, 21M passages). Lines with ``title`` and ``text`` fields are
  read too.
* questions as FlashRAG JSONL, ``{"id": "test_0", "question": "...", "golden_answers":
  ["..."]}`` (NQ, TriviaQA, PopQA, HotpotQA, 2WikiMultihopQA, Musique, Bamboogle), or as the
  parquet files Search-R1's ``scripts/data_process/*.py`` write (``question`` and
  ``golden_answers`` columns, or ``reward_model.ground_truth.target``); parquet needs
  ``pyarrow`` (``pip install agentgym[search]``).

:class:`CorpusSearchEnv` indexes the corpus with the same BM25 (built once per corpus file,
cached under ``$AGENTGYM_CACHE``, keyed by the file's path, size and modification time),
plays the same tools (:mod:`.engine`) and scores the same way: exact match after SQuAD's
normalisation against any golden answer (Search-R1's reward), F1 in ``info``. Passages are
read from the file by byte offset when shown, so memory stays small for any corpus size.
The agent sees each passage's own ``id``. With ``embedding_model=`` (e.g. a local copy of
``intfloat/e5-base-v2``, Search-R1's dense retriever) retrieval is dense instead
(:mod:`agentgym.retrieval.dense`). There is no oracle (the files give answers, not
the reads that find them).
"""

from __future__ import annotations

import json
import os
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from agentgym.contract.core import TaskSplits
from agentgym.environments.search.engine import Retriever, SearchToolsEnv
from agentgym.retrieval import shared_dense_index, shared_index
from agentgym.utils.files import cache_root

USAGE = (
    "CorpusSearchEnv plays over your own files, in Search-R1's formats: pass corpus='path/to/wiki-18.jsonl' "
    '(JSONL, one {"id": ..., "contents": "\\"Title\\"\\ntext"} object a line) and at least one question file, '
    "e.g. test='path/to/nq/test.jsonl' (FlashRAG JSONL with 'question' and 'golden_answers') or Search-R1's "
    "test.parquet; train= and dev= take files too. Search-R1's README says where to download them "
    "(docs/search.md, 'Your own corpus')."
)


class SearchSetupError(ValueError):
    """The corpus or question files are missing or unreadable; the message says what to provide."""


def _split_contents(record: dict[str, Any]) -> tuple[str, str]:
    """(title, text) of a corpus record: Search-R1's ``contents`` ('"Title"\\ntext') or ``title``/``text``."""
    if "contents" in record:
        contents = str(record["contents"])
        first, _, rest = contents.partition("\n")
        return first.strip().strip('"'), rest.strip()
    return str(record.get("title", "")), str(record.get("text", ""))


class JsonlCorpus:
    """A Search-R1 JSONL corpus read by byte offsets (recorded once, cached beside the index)."""

    def __init__(self, path: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path).expanduser().resolve()
        if not self.path.is_file():
            raise SearchSetupError(f"corpus file {str(self.path)!r} does not exist. {USAGE}")
        stat = self.path.stat()
        self.name = f"corpus-{self.path}"
        self.meta = {"path": str(self.path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        self._cache = cache_root(cache_dir) / "retrieval" / "corpora"
        self.offsets, self.ids = self._load_offsets()
        self.num_docs = len(self.offsets) - 1
        if self.num_docs == 0:
            raise SearchSetupError(f"corpus file {str(self.path)!r} holds no passages. {USAGE}")
        self._row_ids = self.ids is None
        if self.ids is not None:
            self._order = np.argsort(self.ids, kind="stable")
            self._sorted_ids = self.ids[self._order]

    def _load_offsets(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Byte offsets of the lines (and the ids, unless every id is its row number), from the cache or a scan."""
        import hashlib

        key = hashlib.blake2b(json.dumps(self.meta, sort_keys=True).encode(), digest_size=8).hexdigest()
        folder = self._cache / key
        if (folder / "offsets.npy").exists():
            ids_file = folder / "ids.npy"
            return np.load(folder / "offsets.npy", mmap_mode="r"), (np.load(ids_file) if ids_file.exists() else None)
        offsets, ids, row_ids = [0], [], True
        with open(self.path, "rb") as handle:
            for number, line in enumerate(handle):
                if line.strip():
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as error:
                        raise SearchSetupError(f"{self.path}:{number + 1} is not JSON ({error}). {USAGE}") from None
                    if not isinstance(record, dict) or not ({"contents"} <= set(record) or {"text"} <= set(record)):
                        raise SearchSetupError(f"{self.path}:{number + 1} has no 'contents' (or 'text') field. {USAGE}")
                    identifier = str(record.get("id", len(ids)))
                    ids.append(identifier)
                    row_ids = row_ids and identifier == str(len(ids) - 1)
                    offsets.append(offsets[-1] + len(line))
                else:
                    offsets[-1] += len(line)  # a blank line: fold it into the previous passage's span
        folder.mkdir(parents=True, exist_ok=True)
        offset_array = np.array(offsets, dtype=np.int64)
        id_array = None if row_ids else np.array(ids, dtype=f"S{max((len(i.encode()) for i in ids), default=1)}")
        np.save(folder / "offsets.npy", offset_array)
        if id_array is not None:
            np.save(folder / "ids.npy", id_array)
        return offset_array, id_array

    def record(self, doc: int) -> tuple[str, str]:
        """(title, text) of passage ``doc``."""
        start, end = int(self.offsets[doc]), int(self.offsets[doc + 1])
        with open(self.path, "rb") as handle:
            handle.seek(start)
            line = handle.read(end - start)
        return _split_contents(json.loads(line))

    def title(self, doc: int) -> str:
        return self.record(doc)[0]

    def text(self, doc: int) -> str:
        return self.record(doc)[1]

    def doc_id(self, doc: int) -> str:
        return str(doc) if self.ids is None else self.ids[doc].decode()

    def doc_index(self, doc_id: str) -> int | None:
        if self.ids is None:
            return int(doc_id) if doc_id.isdigit() and int(doc_id) < self.num_docs else None
        encoded = doc_id.encode()
        position = int(np.searchsorted(self._sorted_ids, encoded))
        if position < len(self._sorted_ids) and self._sorted_ids[position] == encoded:
            return int(self._order[position])
        return None

    def texts(self):  # noqa: ANN201 -- a generator of str
        """Each passage's indexed text (title and text, as pyserini indexes ``contents``), in order."""
        with open(self.path, "rb") as handle:
            for line in handle:
                if line.strip():
                    title, text = _split_contents(json.loads(line))
                    yield f"{title}\n{text}"


def read_questions(path: str | os.PathLike[str]) -> list[tuple[str, list[str]]]:
    """(question, golden answers) from a FlashRAG JSONL file or a Search-R1 parquet file."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise SearchSetupError(f"question file {str(path)!r} does not exist. {USAGE}")
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as parquet
        except ImportError:
            raise SearchSetupError(
                "reading parquet question files needs pyarrow: pip install 'agentgym[search]'"
            ) from None
        rows = parquet.read_table(path).to_pylist()
    else:
        rows = []
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as error:
                        raise SearchSetupError(f"{path}:{number} is not JSON ({error}). {USAGE}") from None
    questions = []
    for number, row in enumerate(rows, start=1):
        question = row.get("question") if isinstance(row, dict) else None
        answers = _golden_answers(row) if isinstance(row, dict) else None
        if not question or not answers:
            raise SearchSetupError(f"{path}: entry {number} lacks 'question' or 'golden_answers'. {USAGE}")
        questions.append((str(question).strip(), answers))
    return questions


def _golden_answers(row: dict[str, Any]) -> list[str] | None:
    for key in ("golden_answers", "answers", "answer"):
        if row.get(key) is not None:
            value = row[key]
            return [str(item) for item in value] if isinstance(value, (list, tuple, np.ndarray)) else [str(value)]
    target = ((row.get("reward_model") or {}).get("ground_truth") or {}).get("target")
    if target is not None:
        return [str(item) for item in target] if isinstance(target, (list, tuple, np.ndarray)) else [str(target)]
    return None


class CorpusSearchEnv(SearchToolsEnv):
    """The search tools over a user's Search-R1 corpus and questions; see the module docstring."""

    metadata = {**SearchToolsEnv.metadata, "inline_safe": True}
    has_oracle = False
    splits = TaskSplits(0, 0, 0)

    def __init__(
        self,
        corpus: str | os.PathLike[str] | None = None,
        train: str | os.PathLike[str] | None = None,
        dev: str | os.PathLike[str] | None = None,
        test: str | os.PathLike[str] | None = None,
        page_chars: int = 1500,
        cache_dir: str | os.PathLike[str] | None = None,
        embedding_model: str | None = None,
        render_mode: str | None = None,
    ) -> None:
        super().__init__(page_chars, render_mode)
        self.embedding_model = embedding_model
        if corpus is None or not any((train, dev, test)):
            raise SearchSetupError(USAGE)
        self.cache_dir = cache_dir
        self.documents = JsonlCorpus(corpus, cache_dir)
        self.questions = {
            split: read_questions(path) if path else []
            for split, path in (("train", train), ("dev", dev), ("test", test))
        }
        self.splits = TaskSplits(*(len(self.questions[split]) for split in ("train", "dev", "test")))  # type: ignore[misc]
        self.index  # noqa: B018 -- load (or build) the index now, so reset and step stay fast

    @property
    def corpus(self) -> JsonlCorpus:  # type: ignore[override]
        return self.documents

    @cached_property
    def index(self) -> Retriever:  # type: ignore[override]
        corpus, cache = self.documents, self.cache_dir
        if self.embedding_model:
            model = self.embedding_model
            return shared_dense_index(
                corpus.name, corpus.texts, corpus.num_docs, model, meta=corpus.meta, cache_dir=cache
            )
        return shared_index(corpus.name, corpus.texts, corpus.num_docs, meta=corpus.meta, cache_dir=cache)

    def _question(self, task_id: int) -> tuple[str, list[str]]:
        split = self.splits.split_of(task_id)
        question, answers = self.questions[split][task_id - self.splits.ids(split).start]
        return question, list(answers)

    def _instruction(self) -> str:
        return (
            "Answer the question by searching the corpus. Answer with a short phrase (a name, date or number) only.\n"
            f"Question: {self.question}"
        )

    def oracle_action(self) -> str:
        """No scripted solver: the files give answers, not the reads that find them (``has_oracle`` is False)."""
        return f"search[{self.question}]"

    def random_action(self, rng: Any) -> str:
        words = self.question.rstrip("?").split()
        return f"search[{' '.join(rng.sample(words, min(3, len(words))))}]"
