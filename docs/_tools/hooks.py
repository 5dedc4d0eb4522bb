"""MkDocs hooks of the docs site (mkdocs.yml ``hooks:``).

The pages link the benchmarks' recorded results (``../benchmarks/results/NAME.md``), which sit
outside ``docs/``. The site includes those files under ``benchmarks/results/`` and points the
links there, so a missing or renamed result is still a broken link for ``mkdocs build --strict``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

RESULTS = "benchmarks/results"
RESULT_SUFFIXES = {".md", ".png"}


def on_files(files: Files, config: Any) -> Files:
    """Add the recorded benchmark results (Markdown and plots) to the site."""
    root = Path(config.config_file_path).parent
    for path in sorted((root / RESULTS).iterdir()):
        if path.suffix in RESULT_SUFFIXES:
            files.append(File(f"{RESULTS}/{path.name}", str(root), config.site_dir, config.use_directory_urls))
    return files


def on_page_markdown(markdown: str, page: Page, config: Any, files: Files) -> str:
    """Links from a docs page to ``benchmarks/results/`` (outside docs/) go to the site's copy."""
    depth = page.file.src_uri.count("/")
    if page.file.src_uri.startswith(RESULTS):
        return markdown
    outside = re.escape("../" * (depth + 1) + RESULTS + "/")
    return re.sub(r"\]\(" + outside, "](" + "../" * depth + RESULTS + "/", markdown)
