"""A tenant's mail as files: Maildirs written from generated content, and read back by checkers.

Layout of a tenant (``<tenants>/<tenant>/``): ``mail/<login>/Maildir`` per account (INBOX in
the Maildir itself, other folders as Maildir++ ``.<Name>`` sub-folders; Dovecot's separator is
``/`` so ``Projects/2026`` is ``.Projects.2026``), ``outbox/new`` (mail sent outside the company,
see ``server/smtp_server.py``), and ``roundcube.db`` (Roundcube's own database).

Messages are written with fixed UIDs (``dovecot-uidlist``, format 3) so that a message's
page in Roundcube (``?_task=mail&_mbox=Invoices&_uid=17&_action=show``) is known in advance.
Flags live in the file name (``:2,FRS``: flagged, replied, seen).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesHeaderParser, BytesParser
from email.utils import formataddr
from pathlib import Path
from typing import Any

#: UIDVALIDITY of every generated folder (any fixed number: clients see one per folder).
UIDVALIDITY = 1767225600
_FLAGS = re.compile(r":2,([A-Za-z]*)$")


def folder_path(maildir: Path, folder: str) -> Path:
    """The directory of ``folder`` (``INBOX``, ``Invoices``, ``Projects/2026``) in ``maildir``."""
    return maildir if folder.upper() == "INBOX" else maildir / ("." + folder.replace("/", "."))


def render(message: Mapping[str, Any]) -> bytes:
    """The RFC 5322 bytes of a generated message."""
    mail = EmailMessage(policy=policy.default.clone(linesep="\n"))
    mail["Return-Path"] = f"<{message['from'][1]}>"
    mail["Message-ID"] = message["id"]
    mail["Date"] = message["date"]
    mail["From"] = formataddr(tuple(message["from"]))
    mail["To"] = ", ".join(formataddr(tuple(to)) for to in message["to"])
    mail["Subject"] = message["subject"]
    if message.get("in_reply_to"):
        mail["In-Reply-To"] = message["in_reply_to"]
        mail["References"] = " ".join(message["references"])
    mail.set_content(message["body"], charset="utf-8", cte="8bit")
    return mail.as_bytes()


def file_name(message: Mapping[str, Any]) -> tuple[str, str]:
    """(base name, flags) of a generated message's file: ``<time>.M<uid>P0.agentgym`` and ``FRS``-style flags."""
    flags = "".join(
        letter for letter, on in (("F", message["flagged"]), ("R", message["answered"]), ("S", message["seen"])) if on
    )
    return f"{message['timestamp']}.M{message['uid']}P0.agentgym", flags


def write_maildir(maildir: Path, folders: Mapping[str, list[Mapping[str, Any]]]) -> None:
    """Write one account's folders (name -> messages with ``uid``) as a Maildir with Dovecot's UID lists."""
    for folder, messages in folders.items():
        path = folder_path(maildir, folder)
        for sub in ("cur", "new", "tmp"):
            (path / sub).mkdir(parents=True, exist_ok=True)
        if path != maildir:
            (path / "maildirfolder").touch()
        lines = []
        for message in sorted(messages, key=lambda item: item["uid"]):
            base, flags = file_name(message)
            (path / "cur" / f"{base}:2,{flags}").write_bytes(render(message))
            lines.append(f"{message['uid']} :{base}")
        guid = hashlib.md5(f"{maildir}/{folder}".encode()).hexdigest()  # noqa: S324 (an id, not security)
        next_uid = max((message["uid"] for message in messages), default=0) + 1
        header = f"3 V{UIDVALIDITY} N{next_uid} G{guid}"
        (path / "dovecot-uidlist").write_text("\n".join([header, *lines]) + "\n")
    names = sorted(folder for folder in folders if folder.upper() != "INBOX")
    (maildir / "subscriptions").write_text("".join(f"{name}\n" for name in names))


@dataclass(frozen=True)
class StoredMessage:
    """One message file of a tenant's account, as checkers see it."""

    folder: str
    path: Path
    flags: str
    uid: int | None
    mail: EmailMessage

    @property
    def message_id(self) -> str:
        return str(self.mail.get("Message-ID", "")).strip()

    @property
    def seen(self) -> bool:
        return "S" in self.flags

    @property
    def flagged(self) -> bool:
        return "F" in self.flags

    @property
    def deleted(self) -> bool:
        """Marked deleted (IMAP ``\\Deleted``, not yet expunged)."""
        return "T" in self.flags

    def text(self) -> str:
        """The plain-text body (the first text part; HTML with tags dropped when there is no plain one)."""
        part = self.mail.get_body(preferencelist=("plain", "html"))
        if part is None:
            return ""
        content = part.get_content()
        return re.sub(r"<[^>]+>", " ", content) if part.get_content_subtype() == "html" else content


class Account:
    """One account's Maildir in a tenant: its folders and messages, read from the files each time."""

    def __init__(self, maildir: Path) -> None:
        self.maildir = maildir

    def folders(self) -> list[str]:
        """Folder names, ``INBOX`` first (``Projects/2026`` for ``.Projects.2026``)."""
        names = ["INBOX"] if self.maildir.is_dir() else []
        if self.maildir.is_dir():
            for path in sorted(self.maildir.iterdir()):
                if path.is_dir() and path.name.startswith(".") and (path / "cur").is_dir():
                    names.append(path.name[1:].replace(".", "/"))
        return names

    def subscribed(self) -> list[str]:
        """The folders listed in Dovecot's ``subscriptions`` file."""
        path = self.maildir / "subscriptions"
        if not path.exists():
            return []
        lines = path.read_text().splitlines()
        if lines and lines[0].startswith("V\t"):  # format 2: a version line, a blank line, then names
            lines = lines[2:]
        return [line.replace("\t", "/") for line in lines if line]

    def uids(self, folder: str) -> dict[str, int]:
        """File base name -> UID, from the folder's ``dovecot-uidlist``."""
        path = folder_path(self.maildir, folder) / "dovecot-uidlist"
        found: dict[str, int] = {}
        if path.exists():
            for line in path.read_text().splitlines()[1:]:
                head, _, name = line.partition(":")
                if name and head.split():
                    found[name] = int(head.split()[0])
        return found

    def _files(self, folder: str) -> Iterator[tuple[Path, str, str]]:
        """``(file, base name, flags)`` of each message file of ``folder`` (``new/`` and ``cur/``)."""
        path = folder_path(self.maildir, folder)
        for sub in ("new", "cur"):
            directory = path / sub
            if directory.is_dir():
                for file in sorted(directory.iterdir()):
                    flags = _FLAGS.search(file.name)
                    yield file, file.name.split(":", 1)[0], flags.group(1) if flags else ""

    def messages(self, folder: str) -> Iterator[StoredMessage]:
        """The messages of ``folder`` (``new/`` and ``cur/``), headers and bodies parsed."""
        uids = self.uids(folder)
        parser = BytesParser(policy=policy.default)
        for file, base, flags in self._files(folder):
            try:
                data = file.read_bytes()
            except FileNotFoundError:  # moved by Dovecot meanwhile
                continue
            mail = parser.parsebytes(data)
            assert isinstance(mail, EmailMessage)
            yield StoredMessage(folder, file, flags, uids.get(base), mail)

    def all_messages(self) -> Iterator[StoredMessage]:
        for folder in self.folders():
            yield from self.messages(folder)

    def message_ids(self, known: dict[tuple[str, str, int, int], str]) -> Iterator[tuple[str, str, bool]]:
        """``(folder, Message-ID, deleted)`` of every message, as :meth:`all_messages` reads them, parsing the headers
        only of the files that ``known`` ((folder, base name, size, mtime) -> Message-ID) lacks, and adding those to
        it: a checker that reads an account at every step reads each message file once. (A Maildir file's base name
        names one delivery to its folder; new flags rename the file, a copy or a move is a new file, and a rewrite,
        :meth:`.MailSite.rewrite_message`'s, changes its size and time.)"""
        parser = BytesHeaderParser(policy=policy.default)
        for folder in self.folders():
            for file, base, flags in self._files(folder):
                try:
                    stat = file.stat()
                    key = (folder, base, stat.st_size, stat.st_mtime_ns)
                    if key not in known:
                        known[key] = str(parser.parsebytes(file.read_bytes()).get("Message-ID", "")).strip()
                except FileNotFoundError:  # moved by Dovecot meanwhile
                    continue
                yield folder, known[key], "T" in flags

    def find(self, message_id: str) -> list[StoredMessage]:
        """Every copy of the message with ``message_id`` (not ``\\Deleted``), in any folder."""
        return [message for message in self.all_messages() if message.message_id == message_id and not message.deleted]


def outbox(tenant_dir: Path) -> list[EmailMessage]:
    """The messages a tenant sent outside the company (see ``server/smtp_server.py``), oldest first."""
    parser = BytesParser(policy=policy.default)
    folder = tenant_dir / "outbox" / "new"
    if not folder.is_dir():
        return []
    found = []
    for file in sorted(folder.iterdir(), key=lambda path: path.stat().st_mtime_ns):
        mail = parser.parsebytes(file.read_bytes())
        assert isinstance(mail, EmailMessage)
        found.append(mail)
    return found


def state_digest(tenant_dir: Path) -> str:
    """A checksum of a tenant's mail state, as a mail client sees it, in a fixed order.

    Per account: its folders, subscriptions and Sieve scripts, and each message's bytes and
    flags (by its file's unique name, in ``new/`` or ``cur/`` alike); the outbox; Roundcube's
    rows but its sessions and caches. Left out are what reading alone rewrites: Dovecot's
    index files and the sessions' last-access times.
    """
    digest = hashlib.sha256()

    def add(*parts: object) -> None:
        digest.update(repr(parts).encode() + b"\n")

    for home in sorted((tenant_dir / "mail").iterdir()) if (tenant_dir / "mail").is_dir() else []:
        account = Account(home / "Maildir")
        add("account", home.name, account.folders(), sorted(account.subscribed()))
        for folder in account.folders():
            for message in sorted(account.messages(folder), key=lambda item: item.path.name):
                unique = message.path.name.split(":")[0].split(",")[0]
                add(
                    folder,
                    unique,
                    "".join(sorted(message.flags)),
                    hashlib.sha256(message.path.read_bytes()).hexdigest(),
                )
        for script in sorted((home / "sieve").glob("*.sieve")) if (home / "sieve").is_dir() else []:
            add("sieve", script.name, script.read_text())
        active = home / ".dovecot.sieve"
        add("active", os.readlink(active) if active.is_symlink() else None)
    outbox_dir = tenant_dir / "outbox" / "new"
    for path in sorted(outbox_dir.iterdir()) if outbox_dir.is_dir() else []:
        add("outbox", path.name, hashlib.sha256(path.read_bytes()).hexdigest())
    database = tenant_dir / "roundcube.db"
    if database.exists():
        # immutable: no locks and no -shm file (a root reader must not leave files PHP cannot open)
        with contextlib.closing(sqlite3.connect(f"file:{database}?immutable=1", uri=True)) as connection:
            tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in sorted(tables):
                if table == "session" or table.startswith("cache"):
                    continue
                rows = connection.execute(f'SELECT * FROM "{table}"').fetchall()
                add("table", table, sorted(map(repr, rows)))
    return digest.hexdigest()
