"""BM25 search over a catalog: the core's shared BM25 index, built once per catalog, cached, memory-mapped.

The original WebShop searches a Lucene index (pyserini, BM25 with k1 = 0.9, b = 0.4, the
English stop words and Porter stemming) and shows the top 50 hits, 10 per page. The
analysis, the index files and the exact, deterministic search (ties broken by the lower
product index) are :mod:`agentgym.retrieval.bm25`'s, which does the same in numpy with no
JVM; this module indexes a catalog's ``search_text(i)`` for every product with it.

The files live in ``<cache>/webshop/index/<catalog name>-<digest>/`` where ``<cache>`` is the
``cache_dir`` argument, else ``$AGENTGYM_CACHE``, else ``~/.cache/agentgym``. They are loaded
with ``numpy.load(mmap_mode="r")``: pages come from the OS page cache, are shared by every
process that searches the same catalog, and only the posting lists a query touches are read.
:func:`shared_index` keeps one :class:`SearchIndex` per catalog for the whole process,
created on first use, so every env copy of a process searches the same arrays.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agentgym.retrieval import bm25
from agentgym.retrieval.bm25 import tokenize
from agentgym.utils.files import cache_root

if TYPE_CHECKING:
    from agentgym.environments.webshop.data import Catalog

__all__ = [
    "PAGE_SIZE",
    "SEARCH_RETURN_N",
    "SearchIndex",
    "cache_root",
    "index_directory",
    "page_count",
    "shared_index",
    "tokenize",
]

#: Results a search returns and results shown per page (the original's SEARCH_RETURN_N, PRODUCT_WINDOW).
SEARCH_RETURN_N = 50
PAGE_SIZE = 10
#: Where in the cache WebShop keeps its catalogs' indexes.
INDEX_FOLDER = "webshop/index"


def index_directory(catalog_name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the index of the catalog called ``catalog_name``."""
    return bm25.index_directory(catalog_name, cache_dir, folder=INDEX_FOLDER)


def _catalog_meta(catalog: Catalog) -> dict[str, str]:
    """What an index of ``catalog`` records it was built from (with its size, checked too)."""
    return {"corpus": catalog.name}


def _catalog_texts(catalog: Catalog) -> Iterator[str]:
    """Every product's search text, in product order."""
    return (catalog.search_text(index) for index in range(len(catalog)))


class SearchIndex(bm25.BM25Index):
    """The core's BM25 index over a catalog's products, returning the original's 50 results by default."""

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """The indices of the ``k`` best products for ``query``, best first (ties: lower index first)."""
        return super().search(query, k)

    @classmethod
    def build(cls, catalog: Catalog, directory: str | os.PathLike[str]) -> SearchIndex:  # type: ignore[override]
        """Index every product of ``catalog`` into ``directory`` (replacing what is there) and load it."""
        bm25.write_index(_catalog_texts(catalog), len(catalog), directory, _catalog_meta(catalog))
        return cls(directory)

    @classmethod
    def load_or_build(cls, catalog: Catalog, cache_dir: str | os.PathLike[str] | None = None) -> SearchIndex:
        """The cached index of ``catalog``, built first (under a file lock) when missing or stale."""
        return bm25.load_or_build_index(
            index_directory(catalog.name, cache_dir),
            lambda: _catalog_texts(catalog),
            len(catalog),
            meta=_catalog_meta(catalog),
            index_type=cls,
        )

    def matches(self, catalog: Catalog) -> bool:  # type: ignore[override]
        """Whether this index was built, with this code's format, for ``catalog``."""
        return super().matches(_catalog_meta(catalog), len(catalog))


def shared_index(catalog: Catalog, cache_dir: str | os.PathLike[str] | None = None) -> SearchIndex:
    """The process-wide index of ``catalog``, loaded or built on first call."""
    return bm25.shared_index(
        catalog.name,
        lambda: _catalog_texts(catalog),
        len(catalog),
        meta=_catalog_meta(catalog),
        cache_dir=cache_dir,
        directory=index_directory(catalog.name, cache_dir),
        index_type=SearchIndex,
    )


def page_count(num_results: int) -> int:
    """How many result pages ``num_results`` hits fill (at least one)."""
    return max(1, math.ceil(num_results / PAGE_SIZE))
