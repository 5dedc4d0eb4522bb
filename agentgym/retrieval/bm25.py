"""BM25 over any corpus: built once, cached on disk, memory-mapped, shared by a process.

The analysis is Lucene's English one, as pyserini's BM25 (the sparse retriever of
Search-R1 and of the original WebShop) uses it, in numpy, with no JVM:

* :func:`tokenize`: lowercase, split at every character that is not a letter or digit,
  drop Lucene's English stop words, Porter-stem (PyStemmer), cut tokens at 40 characters.
* :meth:`BM25Index.build`: one pass over the documents' texts, written as a term-sorted
  vocabulary (looked up by binary search, no dict in memory) and a posting list per term
  whose entries hold the document and its precomputed BM25 weight ``idf * tf * (k1 + 1) /
  (tf + k1 * (1 - b + b * len / avglen))`` with ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``
  (Lucene's formula; k1 = 0.9, b = 0.4, pyserini's defaults). Postings are written chunk by
  chunk, so building millions of documents keeps memory bounded.
* :meth:`BM25Index.search`: sums the weights of the query's terms (a repeated term counts
  as often as it is repeated) and returns the best ``k`` documents, ties broken by the
  lower index, so results are deterministic. It is exact, but skips the long posting lists
  of common terms when their weights cannot matter (MaxScore pruning, with each term's
  largest weight stored at build time), and selects the best ``k`` by sampled thresholds
  rather than ``argpartition`` (which slows down badly on many equal scores).

Files are read with ``numpy.load(mmap_mode="r")``: pages come from the OS page cache, are
shared by every process that searches the same corpus, and only the posting lists a query
touches are read. :func:`shared_index` keeps one :class:`BM25Index` per corpus name for the
whole process and builds a missing index under a file lock, so two processes (pytest
workers, vector env workers) never build the same index at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import Stemmer

from agentgym.utils.files import build_once, cache_root, file_lock, written_aside

__all__ = [
    "BM25Index",
    "Hit",
    "file_lock",
    "index_directory",
    "load_or_build_index",
    "shared_index",
    "tokenize",
    "top_k",
    "write_index",
]

K1, B = 0.9, 0.4
MAX_TOKEN_CHARS = 40
#: Bumped when the files' format or the analysis changes (older caches are then rebuilt).
INDEX_VERSION = 1
CHUNK_DOCS = 50_000

#: Lucene's English stop words (the analyzer pyserini's default index uses).
_LUCENE_STOP_WORDS = """a an and are as at be but by for if in into is it no not of on or such that the their then there
these they this to was will with"""
STOP_WORDS = frozenset(_LUCENE_STOP_WORDS.split())
_TOKEN = re.compile(r"[^\W_]+")
_local = threading.local()
IndexT = TypeVar("IndexT", bound="BM25Index")


def _stemmer() -> Stemmer.Stemmer:
    """A Porter stemmer for this thread (PyStemmer's objects are not thread-safe)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("porter")
    return stemmer


def tokenize(text: str) -> list[str]:
    """The index terms of ``text``: lowercased, stop words dropped, Porter-stemmed."""
    words = [word[:MAX_TOKEN_CHARS] for word in _TOKEN.findall(text.lower()) if word not in STOP_WORDS]
    return _stemmer().stemWords(words) if words else []


def index_directory(
    name: str, cache_dir: str | os.PathLike[str] | None = None, *, folder: str = "retrieval/bm25"
) -> Path:
    """The folder holding the BM25 index of the corpus called ``name``: ``<cache>/<folder>/<name>-<digest>``.

    ``folder`` lets a family keep its indexes in its own part of the cache (WebShop: ``webshop/index``).
    """
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80]
    digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    return cache_root(cache_dir).joinpath(*folder.split("/")) / f"{safe}-{digest}"


@dataclass(frozen=True)
class Hit:
    """One search result: the document's index in the corpus and its BM25 score."""

    doc: int
    score: float


class BM25Index:
    """A BM25 index over a corpus, read from memory-mapped files (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        directory = Path(directory)
        self.directory = directory
        self.meta: dict[str, Any] = json.loads((directory / "meta.json").read_text())
        self.num_docs: int = self.meta["num_docs"]
        # Plain ndarray views of the memory maps (numpy.memmap's own indexing is slower).
        self.vocab = np.asarray(np.load(directory / "vocab.npy", mmap_mode="r"))
        self.indptr = np.asarray(np.load(directory / "indptr.npy", mmap_mode="r"))
        self.docs = np.asarray(np.load(directory / "docs.npy", mmap_mode="r"))
        self.weights = np.asarray(np.load(directory / "weights.npy", mmap_mode="r"))
        self.max_weights = np.asarray(np.load(directory / "max_weights.npy", mmap_mode="r"))

    # ---- building -------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        num_docs: int,
        directory: str | os.PathLike[str],
        meta: dict[str, Any] | None = None,
    ) -> BM25Index:
        """Index ``texts`` (exactly ``num_docs`` of them) into ``directory``, replacing what is there, and load it.

        ``meta`` is stored with the index (what it was built from); see :func:`write_index`.
        """
        write_index(texts, num_docs, directory, meta)
        return cls(directory)

    def matches(self, meta: dict[str, Any], num_docs: int) -> bool:
        """Whether this index was built, with this code's format, from ``num_docs`` documents described by ``meta``."""
        return _meta_matches(self.meta, meta, num_docs)

    @property
    def size_bytes(self) -> int:
        """The index's size on disk."""
        return sum(path.stat().st_size for path in self.directory.iterdir() if path.is_file())

    # ---- searching --------------------------------------------------------------------

    def term_id(self, term: str) -> int:
        """The id of ``term`` in the vocabulary, or -1."""
        encoded = term.encode()
        if not len(self.vocab) or len(encoded) > self.vocab.dtype.itemsize:
            return -1
        position = int(np.searchsorted(self.vocab, np.bytes_(encoded)))
        if position < len(self.vocab) and self.vocab[position] == encoded:
            return position
        return -1

    def search(self, query: str, k: int = 10) -> list[int]:
        """The indices of the ``k`` best documents for ``query``, best first (ties: lower index first)."""
        return [hit.doc for hit in self.search_hits(query, k)]

    def search_hits(self, query: str, k: int = 10) -> list[Hit]:
        """The ``k`` best documents for ``query`` with their scores, best first (ties: lower index first).

        Exact BM25, computed without touching every posting when it can (MaxScore pruning):
        the full scores of the documents holding the rarest terms give a score ``theta`` that
        the k-th result reaches at least; the terms whose bounds (their largest weight) sum
        below ``theta`` cannot lift a document that holds none of the other terms into the
        results, so only documents holding one of the other terms are scored, each term's
        weight looked up by binary search in its sorted posting list. A score is always the
        float32 sum of its terms' weights in the order of the sorted terms, so every path
        gives the same numbers.
        """
        lists = []
        for term, count in sorted(Counter(tokenize(query)).items()):
            term_id = self.term_id(term)
            if term_id >= 0:
                start, end = int(self.indptr[term_id]), int(self.indptr[term_id + 1])
                bound = float(self.max_weights[term_id]) * count
                lists.append(_Postings(self.docs[start:end], self.weights[start:end], np.float32(count), bound))
        if not lists or k <= 0:
            return []
        small = max(4096, self.num_docs // 64)
        lists_to_union = lists
        if sum(len(p.docs) for p in lists) > small:
            # A lower bound on the k-th score: the best k among the documents of the rarest terms.
            seed, size = [], 0
            for postings in sorted(lists, key=lambda p: len(p.docs)):
                if size >= 4 * k or size + len(postings.docs) > small:
                    break
                seed.append(postings)
                size += len(postings.docs)
            theta = 0.0
            seed_docs = _union(seed) if seed else np.zeros(0, dtype=np.int32)
            if len(seed_docs) >= k:  # any k real documents bound the k-th score: a strided subset will do
                seed_scores = _score(seed_docs[:: max(1, len(seed_docs) // (16 * k))], lists)
                if len(seed_scores) >= k:
                    theta = float(np.partition(seed_scores, len(seed_scores) - k)[len(seed_scores) - k])
            # Terms that cannot matter alone: the smallest bounds, summing below theta (with a float margin).
            essential, bound_sum = [], 0.0
            for postings in sorted(lists, key=lambda p: p.bound):
                if not essential and bound_sum + postings.bound < theta * (1 - 1e-5):
                    bound_sum += postings.bound
                else:
                    essential.append(postings)
            if sum(len(p.docs) for p in essential) > small:  # no shortcut: score every posting
                scores = np.zeros(self.num_docs, dtype=np.float32)
                for postings in lists:
                    np.add.at(scores, postings.docs, postings.scaled(postings.weights))
                best = top_k(scores, k)
                return [Hit(int(doc), float(scores[doc])) for doc in best]
            lists_to_union = essential
        candidates = _union(lists_to_union)
        scores = _score(candidates, lists)
        best = top_k(scores, k)
        return [Hit(int(candidates[position]), float(scores[position])) for position in best]


def write_index(
    texts: Iterable[str], num_docs: int, directory: str | os.PathLike[str], meta: dict[str, Any] | None = None
) -> None:
    """Write the BM25 index of ``texts`` (exactly ``num_docs`` of them) into ``directory``, replacing what is there.

    ``meta`` is stored with the index. Writes to a temporary sibling folder and renames it
    into place, so a reader never sees a half-written index; when another process renamed
    its copy into place first, that one is kept.
    """
    with written_aside(directory) as work:
        _write_index(texts, num_docs, work, meta or {})


def _meta_matches(stored: dict[str, Any], meta: dict[str, Any], num_docs: int) -> bool:
    """Whether an index's ``stored`` meta is this code's format, for ``num_docs`` documents described by ``meta``."""
    return (
        stored.get("version") == INDEX_VERSION
        and stored.get("num_docs") == num_docs
        and all(stored.get(key) == value for key, value in meta.items())
    )


@dataclass(frozen=True)
class _Postings:
    docs: np.ndarray  # ascending document indices
    weights: np.ndarray  # their BM25 weights for the term
    count: np.float32  # how often the query repeats the term
    bound: float  # the largest weight times the count

    def scaled(self, weights: np.ndarray) -> np.ndarray:
        """``weights`` times the count (the same float32 products on every path)."""
        return weights * self.count if self.count > 1 else weights


def _union(lists: list[_Postings]) -> np.ndarray:
    """The sorted documents holding any of the terms."""
    if len(lists) == 1:
        return np.asarray(lists[0].docs)
    return np.unique(np.concatenate([p.docs for p in lists]))


def _score(docs: np.ndarray, lists: list[_Postings]) -> np.ndarray:
    """The BM25 scores of ``docs`` (sorted), summed term by term in ``lists`` order."""
    scores = np.zeros(len(docs), dtype=np.float32)
    for postings in lists:
        where = np.searchsorted(postings.docs, docs)
        np.minimum(where, len(postings.docs) - 1, out=where)
        weights = postings.scaled(postings.weights[where])
        scores += np.where(postings.docs[where] == docs, weights, np.float32(0))
    return scores


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest positive ``scores``, largest first, ties by position.

    Robust to many equal scores (which slow ``np.argpartition`` down a lot): a threshold
    from a strided sample splits the scores into those above it (recursed into when they
    are k or more) and those equal to it (taken by position).
    """
    n = len(scores)
    if n <= 8192:
        candidates = np.flatnonzero(scores > 0)
        return candidates[np.lexsort((candidates, -scores[candidates]))[:k]]
    stride = n // 8192
    sample = np.sort(scores[::stride])[::-1]
    rank = min(len(sample) - 1, 4 * k // stride + 1)
    while True:
        threshold = sample[rank]
        if threshold <= 0:  # few positive scores: keep only those (fewer than n, as this one is not)
            positives = np.flatnonzero(scores > 0)
            return positives[top_k(scores[positives], k)]
        above = np.flatnonzero(scores > threshold)  # fewer than n: the sampled one is not above
        if len(above) >= k:
            return above[top_k(scores[above], k)]
        equal = np.flatnonzero(scores == threshold)
        if len(above) + len(equal) >= k:
            candidates = np.concatenate([above, equal[: k - len(above)]])
            return candidates[np.lexsort((candidates, -scores[candidates]))]
        if rank == len(sample) - 1:
            order = np.argsort(-scores, kind="stable")[:k]
            return order[scores[order] > 0]
        rank = min(len(sample) - 1, rank * 2 + 1)  # too few at or above the threshold: lower it


def _write_index(texts: Iterable[str], num_docs: int, directory: Path, meta: dict[str, Any]) -> None:
    """Tokenize every document, then write the vocabulary and BM25-weighted postings to ``directory``."""
    vocabulary: dict[str, int] = {}
    lengths = np.zeros(num_docs, dtype=np.int64)
    document_frequency = np.zeros(0, dtype=np.int64)
    chunk_files = []
    iterator = iter(texts)
    # Pass 1: tokenize, chunk by chunk, into (term, document, term frequency) triples on disk.
    for start in range(0, num_docs, CHUNK_DOCS):
        terms, frequencies, documents = array("i"), array("i"), array("i")
        for index in range(start, min(num_docs, start + CHUNK_DOCS)):
            text = next(iterator, None)
            if text is None:
                raise ValueError(f"the corpus has {index} documents, not the {num_docs} announced")
            words = tokenize(text)
            lengths[index] = len(words)
            counts = Counter(words)
            for word, count in counts.items():
                term = vocabulary.get(word)
                if term is None:
                    term = vocabulary[word] = len(vocabulary)
                terms.append(term)
                frequencies.append(count)
            documents.extend([index] * len(counts))
        term_array = np.frombuffer(terms, dtype=np.int32)
        counts_here = np.bincount(term_array, minlength=len(vocabulary))
        grown = np.zeros(len(vocabulary), dtype=np.int64)
        grown[: len(document_frequency)] = document_frequency
        document_frequency = grown + counts_here
        path = directory / f"chunk{len(chunk_files)}.npz"
        np.savez(
            path,
            terms=term_array,
            documents=np.frombuffer(documents, dtype=np.int32),
            frequencies=np.frombuffer(frequencies, dtype=np.int32),
        )
        chunk_files.append(path)
    if next(iterator, None) is not None:
        raise ValueError(f"the corpus has more than the {num_docs} documents announced")

    # The vocabulary, sorted by UTF-8 bytes so that a term is found by binary search.
    words = list(vocabulary)
    encoded = [word.encode() for word in words]
    order = sorted(range(len(words)), key=encoded.__getitem__)
    new_id = np.empty(len(words), dtype=np.int64)
    new_id[order] = np.arange(len(words))
    width = max((len(item) for item in encoded), default=1)
    np.save(directory / "vocab.npy", np.array([encoded[i] for i in order], dtype=f"S{width}"))
    frequency = np.zeros(len(words), dtype=np.int64)
    frequency[new_id] = document_frequency
    indptr = np.zeros(len(words) + 1, dtype=np.int64)
    np.cumsum(frequency, out=indptr[1:])
    np.save(directory / "indptr.npy", indptr)

    # Pass 2: scatter each chunk's postings into place, documents ascending within a term.
    idf = np.log1p((num_docs - frequency + 0.5) / (frequency + 0.5))
    average_length = float(lengths.mean()) if num_docs and lengths.mean() > 0 else 1.0
    total = int(indptr[-1])
    docs_out = np.lib.format.open_memmap(directory / "docs.npy", mode="w+", dtype=np.int32, shape=(total,))
    weights_out = np.lib.format.open_memmap(directory / "weights.npy", mode="w+", dtype=np.float32, shape=(total,))
    cursor = indptr[:-1].copy()
    max_weights = np.zeros(len(words), dtype=np.float32)
    for path in chunk_files:
        with np.load(path) as chunk:
            terms_new = new_id[chunk["terms"]]
            documents = chunk["documents"]
            frequencies = chunk["frequencies"].astype(np.float64)
        by_term = np.argsort(terms_new, kind="stable")
        terms_new, documents, frequencies = terms_new[by_term], documents[by_term], frequencies[by_term]
        rank = np.arange(len(terms_new)) - np.searchsorted(terms_new, terms_new, side="left")
        positions = cursor[terms_new] + rank
        norm = K1 * (1 - B + B * lengths[documents] / average_length)
        weights = (idf[terms_new] * frequencies * (K1 + 1) / (frequencies + norm)).astype(np.float32)
        docs_out[positions] = documents
        weights_out[positions] = weights
        np.maximum.at(max_weights, terms_new, weights)
        cursor += np.bincount(terms_new, minlength=len(words))
        path.unlink()
    np.save(directory / "max_weights.npy", max_weights)
    docs_out.flush()
    weights_out.flush()
    del docs_out, weights_out
    stored = {
        **meta,
        "version": INDEX_VERSION,
        "num_docs": num_docs,
        "num_terms": len(words),
        "num_postings": total,
        "average_length": average_length,
        "k1": K1,
        "b": B,
        "stemmer": "porter",
    }
    (directory / "meta.json").write_text(json.dumps(stored, indent=1))


_SHARED: dict[str, Any] = {}  # an index folder's path: its BM25Index (or subclass)
_SHARED_LOCK = threading.Lock()


def shared_index(
    name: str,
    texts: Callable[[], Iterable[str]],
    num_docs: int,
    *,
    meta: dict[str, Any] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    directory: str | os.PathLike[str] | None = None,
    index_type: type[IndexT] = BM25Index,  # type: ignore[assignment]
) -> IndexT:
    """The process-wide BM25 index of the corpus called ``name``: loaded from the cache, or built first.

    ``texts()`` yields the ``num_docs`` documents' texts in order; it is called only when
    the cache lacks a matching index (``meta``, e.g. the corpus's size and date, must equal
    what was stored with it). The index lives in ``directory``, by default
    :func:`index_directory` of ``name``; it is loaded as an ``index_type`` (a subclass of
    :class:`BM25Index`, e.g. with another default ``k``). See :func:`load_or_build_index`.
    """
    meta = dict(meta or {}, corpus=name)
    directory = Path(directory) if directory is not None else index_directory(name, cache_dir)
    key = str(directory)
    with _SHARED_LOCK:
        index = _SHARED.get(key)
        if isinstance(index, index_type) and _meta_matches(index.meta, meta, num_docs):
            return index
        index = _SHARED[key] = load_or_build_index(directory, texts, num_docs, meta=meta, index_type=index_type)
        return index


def load_or_build_index(
    directory: str | os.PathLike[str],
    texts: Callable[[], Iterable[str]],
    num_docs: int,
    *,
    meta: dict[str, Any] | None = None,
    index_type: type[IndexT] = BM25Index,  # type: ignore[assignment]
) -> IndexT:
    """The index in ``directory`` when it matches ``meta`` and ``num_docs``, else one built there from ``texts()``.

    The build holds a file lock beside the index folder, so a second process waits for the
    first one's index instead of building its own.
    """
    stored_meta = meta or {}

    def build(folder: Path) -> IndexT:
        write_index(texts(), num_docs, folder, stored_meta)
        return index_type(folder)

    return build_once(directory, lambda folder: _load(folder, stored_meta, num_docs, index_type), build)


def _load(directory: Path, meta: dict[str, Any], num_docs: int, index_type: type[IndexT]) -> IndexT | None:
    """The index in ``directory`` if it is complete and matches, else ``None``."""
    try:
        index = index_type(directory)
    except (OSError, ValueError, KeyError):
        return None
    return index if _meta_matches(index.meta, meta, num_docs) else None
