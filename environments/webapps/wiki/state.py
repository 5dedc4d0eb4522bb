"""Reading the wiki's real state from a tenant's SQLite database (MediaWiki 1.39's schema), for checkers.

Pages are rows of ``page`` (namespace, title with underscores); a page's latest revision
(``page_latest``) has a main slot whose content lives in ``text`` (``content_address`` ``tt:<id>``);
a revision's author is its ``actor``. Titles are compared as MediaWiki stores them
(:func:`db_title`).
"""

from __future__ import annotations

import re
import sqlite3
import urllib.parse
import zlib

#: Namespace numbers of the titles tasks use.
NAMESPACES = {"": 0, "Category": 14, "Template": 10, "User": 2}
_INFOBOX_LINE = re.compile(r"^\|\s*(\w+)\s*=\s*(.*?)\s*$", re.MULTILINE)
_CATEGORY = re.compile(r"\[\[\s*Category\s*:\s*([^\]|]+?)\s*(?:\|[^\]]*)?\]\]", re.IGNORECASE)
_HEADING = re.compile(r"^==\s*(.+?)\s*==\s*$", re.MULTILINE)


def db_title(title: str) -> str:
    """A page title as MediaWiki stores it: spaces as underscores, the first letter upper case."""
    title = title.strip().replace(" ", "_")
    return title[:1].upper() + title[1:]


def split_title(full: str) -> tuple[int, str]:
    """(namespace number, stored title) of a full title such as ``Category:Rivers of Velavia``."""
    prefix, colon, rest = full.partition(":")
    if colon and prefix.strip().capitalize() in NAMESPACES:
        return NAMESPACES[prefix.strip().capitalize()], db_title(rest)
    return 0, db_title(full)


def _text(raw: bytes | str, flags: bytes | str) -> str:
    flags = flags.decode() if isinstance(flags, bytes) else flags
    data = raw.encode() if isinstance(raw, str) else raw
    if "gzip" in flags.split(","):
        data = zlib.decompress(data, -zlib.MAX_WBITS)
    return data.decode("utf-8", errors="replace")


def _latest_text_row(db: sqlite3.Connection, full_title: str) -> tuple[int, bytes | str, bytes | str] | None:
    """(text id, raw text, flags) of the page's latest revision (None if there is no such page)."""
    namespace, title = split_title(full_title)
    return db.execute(
        "SELECT t.old_id, t.old_text, t.old_flags FROM page p "
        "JOIN slots s ON s.slot_revision_id = p.page_latest "
        "JOIN content c ON c.content_id = s.slot_content_id "
        "JOIN text t ON t.old_id = CAST(substr(c.content_address, 4) AS INTEGER) "
        "WHERE p.page_namespace = ? AND p.page_title = ? AND c.content_address LIKE 'tt:%'",
        (namespace, title),
    ).fetchone()


def latest_text(db: sqlite3.Connection, full_title: str) -> str | None:
    """The wikitext of the page's latest revision (None if there is no such page)."""
    row = _latest_text_row(db, full_title)
    return None if row is None else _text(row[1], row[2])


def latest_text_id(db: sqlite3.Connection, full_title: str) -> int | None:
    """The ``text`` table's row of the page's latest revision (None if there is no such page)."""
    row = _latest_text_row(db, full_title)
    return None if row is None else row[0]


def editors(db: sqlite3.Connection, full_title: str) -> list[str]:
    """The user names of the page's revisions, oldest first."""
    namespace, title = split_title(full_title)
    rows = db.execute(
        "SELECT a.actor_name FROM revision r JOIN page p ON p.page_id = r.rev_page "
        "JOIN actor a ON a.actor_id = r.rev_actor WHERE p.page_namespace = ? AND p.page_title = ? "
        "ORDER BY r.rev_timestamp, r.rev_id",
        (namespace, title),
    ).fetchall()
    return [_str(row[0]) for row in rows]


def revision_count(db: sqlite3.Connection, full_title: str) -> int:
    """How many revisions the page has."""
    return len(editors(db, full_title))


def category_members(db: sqlite3.Connection, category: str) -> list[str]:
    """The titles (with spaces) of the main-namespace pages in ``category`` (its ``categorylinks``)."""
    rows = db.execute(
        "SELECT p.page_title FROM categorylinks c JOIN page p ON p.page_id = c.cl_from "
        "WHERE c.cl_to = ? AND p.page_namespace = 0 ORDER BY p.page_title",
        (db_title(category),),
    ).fetchall()
    return [_str(row[0]).replace("_", " ") for row in rows]


def _str(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def infobox_facts(text: str) -> dict[str, str]:
    """The ``| name = value`` parameters of the first infobox in ``text`` (links kept as written)."""
    start = text.find("{{Infobox")
    if start < 0:
        return {}
    end = text.find("}}", start)
    return dict(_INFOBOX_LINE.findall(text[start : end if end >= 0 else len(text)]))


def unlink(value: str) -> str:
    """``[[Target|label]]`` -> ``Target``; plain text as it is."""
    match = re.fullmatch(r"\s*\[\[([^\]|]+)(?:\|[^\]]*)?\]\]\s*", value)
    return (match.group(1) if match else value).strip()


def categories(text: str) -> list[str]:
    """The categories the wikitext puts its page in (``[[Category:X]]``), as written."""
    return [name.replace("_", " ") for name in _CATEGORY.findall(text)]


def sections(text: str) -> list[tuple[str | None, str]]:
    """(heading, body) of each level-2 section; the first is the lead (heading None)."""
    parts = _HEADING.split(text)
    found: list[tuple[str | None, str]] = [(None, parts[0])]
    for index in range(1, len(parts), 2):
        found.append((parts[index], parts[index + 1]))
    return found


def squash(text: str) -> str:
    """Text with all runs of whitespace made one space (to compare wikitext up to layout)."""
    return " ".join(text.split())


def page_of_url(path: str) -> tuple[str, str] | None:
    """(title with spaces, action) of a wiki URL path (``/wiki/X``, ``/index.php?title=X&action=history``)."""
    parts = urllib.parse.urlsplit(path)
    query = urllib.parse.parse_qs(parts.query)
    if parts.path.startswith("/wiki/"):
        title = urllib.parse.unquote(parts.path[len("/wiki/") :])
    elif query.get("title"):
        title = query["title"][0]
    else:
        return None
    namespace, stored = split_title(title)
    prefix = next(name for name, number in NAMESPACES.items() if number == namespace)
    full = f"{prefix}:{stored}" if prefix else stored
    return full.replace("_", " "), query.get("action", ["view"])[0]
