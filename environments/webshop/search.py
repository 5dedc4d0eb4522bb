"""BM25 search over a catalog: built once per catalog, cached on disk, memory-mapped, shared.

The original WebShop searches a Lucene index (pyserini, BM25 with k1 = 0.9, b = 0.4, the
English stop words and Porter stemming) and shows the top 50 hits, 10 per page. This module
does the same in numpy, with no JVM:

* :func:`tokenize`: lowercase, split at every character that is not a letter or digit,
  drop Lucene's English stop words, Porter-stem (PyStemmer), cut tokens at 40 characters.
* :meth:`SearchIndex.build`: one pass over ``catalog.search_text(i)`` for every product,
  written as a term-sorted vocabulary (looked up by binary search, no dict in memory) and
  a posting list per term whose entries hold the document and its precomputed BM25 weight
  ``idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen))`` with ``idf = ln(1 + (N -
  df + 0.5) / (df + 0.5))`` (Lucene's formula; the ``k1 + 1`` factor does not change the
  ranking). Postings are written chunk by chunk, so
  building a million products keeps memory bounded.
* :meth:`SearchIndex.search`: sums the weights of the query's terms (a repeated term
  counts as often as it is repeated), and returns the best ``k`` product indices by score,
  ties broken by the lower index, so results are deterministic. It is exact, but skips
  the long posting lists of common terms when their weights cannot matter (MaxScore
  pruning, with each term's largest weight stored at build time), and selects the best
  ``k`` by sampled thresholds rather than ``argpartition``, which slows down badly on
  the many equal scores of templated product texts.

The files live in ``<cache>/webshop/index/<catalog name>/`` where ``<cache>`` is the
``cache_dir`` argument, else ``$AGENTGYM_CACHE``, else ``~/.cache/agentgym``. They are loaded
with ``numpy.load(mmap_mode="r")``: pages come from the OS page cache, are shared by every
process that searches the same catalog, and only the posting lists a query touches are read.
:func:`shared_index` keeps one :class:`SearchIndex` per catalog name for the whole process,
created on first use, so every env copy of a process searches the same arrays.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import threading
from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import Stemmer

if TYPE_CHECKING:
    from agentgym.environments.webshop.data import Catalog

#: Results a search returns and results shown per page (the original's SEARCH_RETURN_N, PRODUCT_WINDOW).
SEARCH_RETURN_N = 50
PAGE_SIZE = 10
K1, B = 0.9, 0.4
MAX_TOKEN_CHARS = 40
INDEX_VERSION = 2
CHUNK_DOCS = 50_000

#: Lucene's English stop words (the analyzer the original's pyserini index uses).
_LUCENE_STOP_WORDS = """a an and are as at be but by for if in into is it no not of on or such that the their then there
these they this to was will with"""
STOP_WORDS = frozenset(_LUCENE_STOP_WORDS.split())
_TOKEN = re.compile(r"[^\W_]+")
_local = threading.local()


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


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where agentgym caches files: ``cache_dir``, else ``$AGENTGYM_CACHE``, else ``~/.cache/agentgym``."""
    if cache_dir is not None:
        return Path(cache_dir)
    if os.environ.get("AGENTGYM_CACHE"):
        return Path(os.environ["AGENTGYM_CACHE"])
    return Path.home() / ".cache" / "agentgym"


def index_directory(catalog_name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the index of the catalog called ``catalog_name``."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", catalog_name)[:80]
    digest = hashlib.blake2b(catalog_name.encode(), digest_size=4).hexdigest()
    return cache_root(cache_dir) / "webshop" / "index" / f"{safe}-{digest}"


class SearchIndex:
    """A BM25 index over a catalog's products, read from memory-mapped files (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        directory = Path(directory)
        self.directory = directory
        self.meta = json.loads((directory / "meta.json").read_text())
        self.num_docs: int = self.meta["num_docs"]
        # Plain ndarray views of the memory maps (numpy.memmap's own indexing is slower).
        self.vocab = np.asarray(np.load(directory / "vocab.npy", mmap_mode="r"))
        self.indptr = np.asarray(np.load(directory / "indptr.npy", mmap_mode="r"))
        self.docs = np.asarray(np.load(directory / "docs.npy", mmap_mode="r"))
        self.weights = np.asarray(np.load(directory / "weights.npy", mmap_mode="r"))
        self.max_weights = np.load(directory / "max_weights.npy")  # one float per term: small

    # ---- building -------------------------------------------------------------------

    @classmethod
    def build(cls, catalog: Catalog, directory: str | os.PathLike[str]) -> SearchIndex:
        """Index every product of ``catalog`` into ``directory`` (replacing what is there) and load it.

        Writes to a temporary sibling folder and renames it into place, so a reader never
        sees a half-written index and two processes building at once do not clash.
        """
        directory = Path(directory)
        directory.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
        try:
            _write_index(catalog, work)
            if directory.exists():
                shutil.rmtree(directory, ignore_errors=True)
            try:
                work.rename(directory)
            except OSError:  # another process renamed its copy first; use that one
                if not (directory / "meta.json").exists():
                    raise
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
        return cls(directory)

    @classmethod
    def load_or_build(cls, catalog: Catalog, cache_dir: str | os.PathLike[str] | None = None) -> SearchIndex:
        """The cached index of ``catalog``, built first when missing or stale."""
        directory = index_directory(catalog.name, cache_dir)
        try:
            index = cls(directory)
            if index.matches(catalog):
                return index
        except (OSError, ValueError, KeyError):
            pass
        return cls.build(catalog, directory)

    def matches(self, catalog: Catalog) -> bool:
        """Whether this index was built, with this code's format, for ``catalog``."""
        meta = self.meta
        return (
            meta.get("version") == INDEX_VERSION
            and meta.get("catalog") == catalog.name
            and meta.get("num_docs") == len(catalog)
        )

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

    def search(self, keywords: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """The indices of the ``k`` best products for ``keywords``, best first (ties: lower index first).

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
        for term, count in sorted(Counter(tokenize(keywords)).items()):
            term_id = self.term_id(term)
            if term_id >= 0:
                start, end = int(self.indptr[term_id]), int(self.indptr[term_id + 1])
                bound = float(self.max_weights[term_id]) * count
                lists.append(_Postings(self.docs[start:end], self.weights[start:end], np.float32(count), bound))
        if not lists or k <= 0:
            return []
        small = max(4096, self.num_docs // 64)
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
                return _top_k(scores, k).tolist()
            lists_to_union = essential
        else:
            lists_to_union = lists
        candidates = _union(lists_to_union)
        return candidates[_top_k(_score(candidates, lists), k)].tolist()


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


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
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
            return positives[_top_k(scores[positives], k)]
        above = np.flatnonzero(scores > threshold)  # fewer than n: the sampled one is not above
        if len(above) >= k:
            return above[_top_k(scores[above], k)]
        equal = np.flatnonzero(scores == threshold)
        if len(above) + len(equal) >= k:
            candidates = np.concatenate([above, equal[: k - len(above)]])
            return candidates[np.lexsort((candidates, -scores[candidates]))]
        if rank == len(sample) - 1:
            return _sorted_top_k(scores, k)
        rank = min(len(sample) - 1, rank * 2 + 1)  # too few at or above the threshold: lower it


def _sorted_top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """The plain way (a stable sort), for the rare inputs the sampling cannot split."""
    order = np.argsort(-scores, kind="stable")[:k]
    return order[scores[order] > 0]


def _write_index(catalog: Catalog, directory: Path) -> None:
    """Tokenize every product, then write the vocabulary and BM25-weighted postings to ``directory``."""
    num_docs = len(catalog)
    vocabulary: dict[str, int] = {}
    lengths = np.zeros(num_docs, dtype=np.int64)
    document_frequency = np.zeros(0, dtype=np.int64)
    chunk_files = []
    # Pass 1: tokenize, chunk by chunk, into (term, document, term frequency) triples on disk.
    for start in range(0, num_docs, CHUNK_DOCS):
        terms, frequencies, documents = array("i"), array("i"), array("i")
        for index in range(start, min(num_docs, start + CHUNK_DOCS)):
            words = tokenize(catalog.search_text(index))
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
        document_frequency = np.concatenate([document_frequency, np.zeros(len(vocabulary) - len(document_frequency))])
        document_frequency = document_frequency.astype(np.int64) + counts_here
        path = directory / f"chunk{len(chunk_files)}.npz"
        np.savez(
            path,
            terms=term_array,
            documents=np.frombuffer(documents, dtype=np.int32),
            frequencies=np.frombuffer(frequencies, dtype=np.int32),
        )
        chunk_files.append(path)

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
    meta = {
        "version": INDEX_VERSION,
        "catalog": catalog.name,
        "num_docs": num_docs,
        "num_terms": len(words),
        "num_postings": total,
        "average_length": average_length,
        "k1": K1,
        "b": B,
        "stemmer": "porter",
    }
    (directory / "meta.json").write_text(json.dumps(meta, indent=1))


_SHARED: dict[str, SearchIndex] = {}
_SHARED_LOCK = threading.Lock()


def shared_index(catalog: Catalog, cache_dir: str | os.PathLike[str] | None = None) -> SearchIndex:
    """The process-wide index of ``catalog`` (keyed by ``catalog.name``), loaded or built on first call."""
    with _SHARED_LOCK:
        index = _SHARED.get(catalog.name)
        if index is None or not index.matches(catalog):
            index = _SHARED[catalog.name] = SearchIndex.load_or_build(catalog, cache_dir)
        return index


def page_count(num_results: int) -> int:
    """How many result pages ``num_results`` hits fill (at least one)."""
    return max(1, math.ceil(num_results / PAGE_SIZE))
