"""The project tree a Bash task starts from: the file model, content generators and :func:`base_tree`.

A :class:`Tree` holds regular files (bytes, mode, modification time) and directories by
path relative to the work dir; :func:`base_tree` draws a 30-60 file project (sources,
docs, logs, CSV and JSON data, scripts, config, caches) from the task's generator.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
import tarfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from agentgym.sandbox import Sandbox

# ---- vocabulary --------------------------------------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


WORDS = _words(
    "able acid also area away back ball band bank base bath beat bell belt best bird blue boat body bone book boot "
    "born both bowl bulk burn busy cake call calm camp card care case cash cast cell chat chip city club coal coat "
    "code cold cook cool copy core cost crew crop dark data date dawn deal dear deep desk dial diet disk door dose "
    "down draw drop dual dust duty earn ease east easy edge even ever exit face fact fair fall farm fast fear feed "
    "feel file fill film find fine fire firm fish five flat flow food foot form fort four free fuel full fund gain "
    "game gate gear gift give glad goal gold golf good gray grow gulf hair half hall hand hard harm have head hear "
    "heat held help here high hill hold hole home hope host hour huge hunt idea inch iron item join jump just keen "
    "keep kind king knee know lack lake land lane last late lead left less life lift like line link list live load "
    "loan lock logo long look lose loss love luck mail main make many mark mass meal mean meat meet menu mile milk "
    "mill mind mint miss mode mood moon more most move much name navy near neck need news next nice nine none nose "
    "note once only open over pace pack page pain pair palm park part pass past path peak pick pink pipe plan play "
    "plot plug plus poll pool poor port post pull pure push race rail rain rank rare rate read real rent rest rice "
    "rich ride ring rise risk road rock role roll roof room root rose rule rush safe sale salt same sand save seat "
    "seed seek self sell send ship shop shot show sick side sign site size skin slip slow snow soft soil sole song "
    "soon sort soul spot star stay step stop suit sure take tale talk tall tank tape task team tell tend term test "
    "text than that them then thin tide till time tiny told tone tool tour town tree trip true tune turn twin type "
    "unit upon used user vary vast very view vote wage wait wake walk wall want warm wash wave weak wear week well "
    "west wide wild wind wine wing wire wise wish wood word work yard year zero zone"
)
NAMES = _words(
    "Ada Alan Alice Amara Bea Ben Bruno Carla Chen Dara Diego Edith Elena Emil Farah Felix Gina Grace Hana Hugo "
    "Ines Ivan Jade Jonas Kai Karim Lara Leo Lina Luca Maya Milo Nadia Nora Omar Otto Pia Priya Quinn Rafael Rosa "
    "Sami Sara Tariq Tess Uma Vera Victor Wen Yara Yusuf Zane Zoe"
)
CITIES = _words(
    "Austin Berlin Cairo Denver Dublin Lagos Lima Lisbon Madrid Miami Osaka Oslo Paris Perth Quito Rome Seoul"
)
COMPONENTS = ("api", "auth", "billing", "cache", "db", "mailer", "queue", "scheduler", "search", "worker")
LEVELS = ("INFO", "WARN", "ERROR", "DEBUG")
STATUSES = ("paid", "pending", "refunded", "shipped")
PATHS = ("/api/items", "/api/users", "/login", "/logout", "/static/app.js", "/cart", "/checkout", "/search", "/")
SERVICES = ("gateway", "indexer", "mailer", "payments", "worker")
VERBS = ("load", "parse", "build", "fetch", "render", "merge", "update", "check", "format", "resolve", "send")
NOUNS = ("config", "user", "order", "report", "cache", "token", "record", "batch", "index", "message", "invoice")
PY_MODULES = ("api", "cli", "models", "storage", "tasks", "views", "utils", "settings", "jobs", "forms", "events")
DOC_TOPICS = ("install", "usage", "faq", "changelog", "api", "deploy", "contributing", "design", "roadmap")
PROJECT_NAMES = ("atlas", "beacon", "cobalt", "drift", "ember", "fable", "garnet", "harbor", "iris", "juniper")

#: Epoch seconds of 2024-01-01 00:00 UTC; generated files are modified during 2023-2024.
EPOCH_2024 = 1_704_067_200
DAY = 86_400


def day_string(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d")


def sed_escape(text: str) -> str:
    """``text`` as a literal in a sed regular expression (and replacement) delimited by ``/``."""
    return re.sub(r"([.\[\]\\*^$/&])", r"\\\1", text)


# ---- the file tree model -----------------------------------------------------------------------


@dataclass
class File:
    """A regular file of the model; ``gzip``/``members`` mark files compared by their content."""

    data: bytes
    mode: int = 0o644
    mtime: int = EPOCH_2024
    #: The file is a gzip stream whose uncompressed content must equal ``data``.
    gzip: bool = False
    #: The file is a .tar.gz whose regular-file members must be exactly these.
    members: dict[str, bytes] | None = None


@dataclass
class Tree:
    """A directory tree: regular files and directories, by path relative to the work dir."""

    files: dict[str, File] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)

    def add(self, path: str, data: bytes | str, mode: int = 0o644, mtime: int | None = None) -> File:
        if isinstance(data, str):
            data = data.encode()
        self.mkdir(os.path.dirname(path))
        entry = File(data, mode, EPOCH_2024 - 30 * DAY if mtime is None else mtime)
        self.files[path] = entry
        return entry

    def mkdir(self, path: str) -> None:
        while path and path not in self.dirs:
            self.dirs.add(path)
            path = os.path.dirname(path)

    def copy(self) -> Tree:
        return Tree({path: File(**vars(entry)) for path, entry in self.files.items()}, set(self.dirs))

    def under(self, directory: str, recursive: bool = True) -> list[str]:
        """Sorted file paths in ``directory`` ("" for the root), recursively or directly."""
        prefix = f"{directory}/" if directory else ""
        return sorted(
            path for path in self.files if path.startswith(prefix) and (recursive or "/" not in path[len(prefix) :])
        )

    def write(self, sandbox: Sandbox) -> None:
        """Create the tree in the (empty) work dir of ``sandbox``, owned by the sandbox's user."""
        root = sandbox.workdir
        for directory in sorted(self.dirs):
            path = os.path.join(root, directory)
            if not os.path.isdir(path):
                os.makedirs(path)
            if os.geteuid() == 0:
                os.chown(path, sandbox.uid, sandbox.gid)
        for path, entry in sorted(self.files.items()):
            target = sandbox.write_file(path, entry.data, mode=entry.mode)
            os.utime(target, (entry.mtime, entry.mtime))

    def tarball(self) -> bytes:
        """The tree as a reproducible .tar.gz (modes and mtimes kept, owner root)."""
        buffer = io.BytesIO()
        with (
            gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped,
            tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive,
        ):
            for directory in sorted(self.dirs):
                info = tarfile.TarInfo(directory)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, EPOCH_2024
                archive.addfile(info)
            for path, entry in sorted(self.files.items()):
                info = tarfile.TarInfo(path)
                info.size, info.mode, info.mtime = len(entry.data), entry.mode, entry.mtime
                archive.addfile(info, io.BytesIO(entry.data))
        return buffer.getvalue()


# ---- content generators ------------------------------------------------------------------------


def sentence(rng: random.Random, low: int = 5, high: int = 12) -> str:
    words = rng.choices(WORDS, k=rng.randint(low, high))
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def log_text(rng: random.Random, lines: int, day: str, weights: tuple[int, ...] = (10, 3, 2, 4)) -> str:
    """Application log lines: ``2024-03-05 12:01:33 ERROR [billing] payment 4411 declined``."""
    messages = (
        lambda: f"request served in {rng.randint(3, 900)}ms",
        lambda: f"cache miss for key user:{rng.randint(1, 999)}",
        lambda: f"connection to db-{rng.randint(1, 4)} reset",
        lambda: f"retrying job {rng.randint(1000, 9999)} (attempt {rng.randint(2, 5)})",
        lambda: f"payment {rng.randint(1000, 9999)} declined",
        lambda: f"disk usage at {rng.randint(40, 99)}%",
        lambda: f"user {rng.choice(NAMES).lower()} logged in",
        lambda: f"scheduled task {rng.choice(VERBS)}_{rng.choice(NOUNS)} finished",
        lambda: f"queue depth {rng.randint(0, 500)}",
    )
    seconds = rng.randint(0, 3600)
    out = []
    for _ in range(lines):
        seconds += rng.randint(1, 120)
        hh, mm, ss = seconds // 3600 % 24, seconds // 60 % 60, seconds % 60
        level = rng.choices(LEVELS, weights=weights)[0]
        out.append(f"{day} {hh:02d}:{mm:02d}:{ss:02d} {level:<5} [{rng.choice(COMPONENTS)}] {rng.choice(messages)()}")
    return "\n".join(out) + "\n"


def access_log(rng: random.Random, lines: int, ips: list[str]) -> str:
    out = []
    seconds = rng.randint(0, 3600)
    for _ in range(lines):
        seconds += rng.randint(1, 90)
        hh, mm, ss = seconds // 3600 % 24, seconds // 60 % 60, seconds % 60
        method = rng.choice(("GET", "GET", "GET", "POST"))
        status = rng.choice((200, 200, 200, 301, 404, 500))
        out.append(
            f'{rng.choice(ips)} - - [05/Mar/2024:{hh:02d}:{mm:02d}:{ss:02d} +0000] "{method} {rng.choice(PATHS)} '
            f'HTTP/1.1" {status} {rng.randint(80, 9000)}'
        )
    return "\n".join(out) + "\n"


def python_source(rng: random.Random, functions: int) -> str:
    out = ['"""' + sentence(rng, 4, 8) + '"""', "", "import os", ""]
    for _ in range(functions):
        verb, noun = rng.choice(VERBS), rng.choice(NOUNS)
        arg = rng.choice(("path", "name", "items", "value", "options"))
        out += ["", f"def {verb}_{noun}({arg}):", f'    """{verb.capitalize()} the {noun}."""']
        if rng.random() < 0.2:
            out.append(f"    # TODO: handle an empty {arg}")
        out += [f"    result = [{arg}, os.sep]", f"    return result[{rng.randint(0, 1)}]", ""]
    return "\n".join(out).rstrip() + "\n"


def markdown(rng: random.Random, title: str, version: str | None = None) -> str:
    out = [f"# {title}", "", paragraph(rng, rng.randint(2, 4)), ""]
    for _ in range(rng.randint(1, 3)):
        out += [f"## {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}", "", paragraph(rng, rng.randint(1, 3)), ""]
        out += [f"- {sentence(rng, 3, 6)}" for _ in range(rng.randint(0, 3))]
        out.append("")
    if version:
        out += [f"Current release: {version}.", ""]
    return "\n".join(out)


def unique_names(rng: random.Random, count: int) -> list[str]:
    return rng.sample(NAMES, count)


def email_of(name: str, rng: random.Random) -> str:
    return f"{name.lower()}.{rng.choice('abcdefghjkmnprstw')}{rng.randint(1, 99)}@example.{rng.choice(('com', 'org'))}"


def users_csv(rng: random.Random, count: int) -> tuple[str, list[list[str]]]:
    rows = []
    for index, name in enumerate(unique_names(rng, count)):
        rows.append([str(100 + index), name, email_of(name, rng), rng.choice(CITIES), str(rng.randint(19, 70))])
    text = "id,name,email,city,age\n" + "".join(",".join(row) + "\n" for row in rows)
    return text, rows


def orders_csv(rng: random.Random, count: int, customers: list[str]) -> tuple[str, list[list[str]]]:
    rows = []
    for index in range(count):
        cents = rng.randint(199, 49_999)
        rows.append(
            [str(5000 + index), rng.choice(customers), f"{cents // 100}.{cents % 100:02d}", rng.choice(STATUSES)]
        )
    text = "order_id,customer,amount,status\n" + "".join(",".join(row) + "\n" for row in rows)
    return text, rows


def users_json(rng: random.Random, count: int) -> tuple[str, list[dict[str, Any]]]:
    users = []
    for index, name in enumerate(unique_names(rng, count)):
        users.append(
            {
                "id": 200 + index * rng.randint(1, 3),
                "name": name,
                "email": email_of(name, rng),
                "active": rng.random() < 0.6,
                "age": rng.randint(19, 70),
            }
        )
    ids = [user["id"] for user in users]
    if len(set(ids)) != len(ids):  # make ids unique and increasing
        for index, user in enumerate(users):
            user["id"] = 200 + index
    return json.dumps(users, indent=2) + "\n", users


def random_bytes(rng: random.Random, size: int) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(size))


# ---- the base tree -----------------------------------------------------------------------------


def base_tree(rng: random.Random) -> Tree:
    """A random project: sources, docs, logs, data, scripts, config, caches and assets."""
    tree = Tree()
    project = rng.choice(PROJECT_NAMES)

    def when(low: int = -300, high: int = 120) -> int:
        return EPOCH_2024 + rng.randint(low, high) * DAY + rng.randint(0, DAY - 1)

    tree.add("README.md", markdown(rng, project.capitalize()), mtime=when())
    tree.add(".gitignore", "*.tmp\n*.bak\n__pycache__/\n.cache/\n", mtime=when())
    if rng.random() < 0.5:
        tree.add("notes.txt", "\n".join(sentence(rng) for _ in range(rng.randint(3, 9))) + "\n", mtime=when())
    for module in rng.sample(PY_MODULES, rng.randint(3, 6)):
        tree.add(f"src/{project}/{module}.py", python_source(rng, rng.randint(1, 4)), mtime=when())
    tree.add(f"src/{project}/__init__.py", "", mtime=when())
    if rng.random() < 0.6:
        for module in rng.sample(("paths", "text", "timing", "retry"), rng.randint(1, 3)):
            tree.add(f"src/{project}/helpers/{module}.py", python_source(rng, rng.randint(1, 2)), mtime=when())
    for topic in rng.sample(DOC_TOPICS, rng.randint(2, 4)):
        tree.add(f"docs/{topic}.md", markdown(rng, topic.capitalize()), mtime=when())
    for _ in range(rng.randint(2, 4)):
        service, day = rng.choice(SERVICES), EPOCH_2024 + rng.randint(0, 90) * DAY
        tree.add(f"logs/{service}-{day_string(day)}.log", log_text(rng, rng.randint(5, 40), day_string(day)), mtime=day)
    text, rows = users_csv(rng, rng.randint(5, 12))
    tree.add("data/users.csv", text, mtime=when())
    if rng.random() < 0.7:
        tree.add("data/orders.csv", orders_csv(rng, rng.randint(8, 25), [row[1] for row in rows])[0], mtime=when())
    for index in range(rng.randint(1, 3)):
        script = f"#!/bin/sh\n# {sentence(rng, 3, 6)}\nset -e\necho {rng.choice(WORDS)}\n"
        mode = rng.choice((0o755, 0o644))
        tree.add(f"scripts/{rng.choice(VERBS)}_{index}.sh", script, mode=mode, mtime=when())
    tree.add(
        "config/app.ini",
        f"[server]\nhost = localhost\nport = {rng.randint(1024, 9999)}\n\n[db]\nhost = localhost\nname = {project}\n",
        mtime=when(),
    )
    if rng.random() < 0.5:
        tree.add("config/logging.yaml", f"level: {rng.choice(LEVELS)}\nformat: plain\nrotate: {rng.randint(1, 9)}\n")
    for index in range(rng.randint(0, 3)):
        tree.add(
            f"tmp/session_{rng.randint(100, 999)}_{index}.tmp", random_bytes(rng, rng.randint(10, 200)), mtime=when()
        )
    for index in range(rng.randint(1, 3)):
        extension = rng.choice(("png", "jpg"))
        tree.add(f"assets/img_{index}.{extension}", random_bytes(rng, rng.randint(100, 1500)), mtime=when())
    return tree
