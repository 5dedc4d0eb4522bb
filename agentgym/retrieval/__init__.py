"""Shared retrieval machinery: a BM25 index built once, cached on disk, memory-mapped, shared.

Families that search a corpus (the search family's generated encyclopedia, a user's
Search-R1 corpus, WebShop's catalogs) build their index through :func:`shared_index`: the first call in a
machine builds it into ``<cache>/retrieval/bm25/<name>/`` (``<cache>`` is ``$AGENTGYM_CACHE``,
else ``~/.cache/agentgym``) under a file lock, every later call loads it with
``numpy.load(mmap_mode="r")``, and every env copy of a process shares one
:class:`BM25Index` object. See :mod:`agentgym.retrieval.bm25` for the scoring.
:mod:`agentgym.retrieval.dense` is the option of a dense retriever over an embedding model the
user names (:func:`shared_dense_index`, cached and shared the same way).

Floor: env machinery; it imports only its own floor and those below it: contract (docs/architecture.md).
"""

from agentgym.retrieval.bm25 import (
    BM25Index,
    Hit,
    file_lock,
    load_or_build_index,
    shared_index,
    tokenize,
    write_index,
)
from agentgym.retrieval.dense import DenseIndex, Encoder, shared_dense_index

__all__ = [
    "BM25Index",
    "DenseIndex",
    "Encoder",
    "Hit",
    "file_lock",
    "load_or_build_index",
    "shared_dense_index",
    "shared_index",
    "tokenize",
    "write_index",
]
