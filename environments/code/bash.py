"""Bash-v0: file-system and text-processing tasks in a real shell (InterCode-Bash style).

Task: a generated project tree (sources, docs, logs, CSV and JSON data, scripts, config,
caches; 30-60 files) is written into a fresh sandbox work dir, and the instruction asks
either a question about it ("How many lines of logs/app.log contain ERROR?") or for a
change to it ("Compress every .log file in logs/archive with gzip"). Task ``task_id``
is drawn from a generator seeded with the id: one of :data:`TEMPLATES` (18 question and
23 file-system templates: find by name, size, mtime, content, permissions; count lines,
words, matches, distinct values; filter, sort, deduplicate, extract CSV/JSON fields;
sed/tr/awk edits; rename, move, copy, delete; tar/gzip; chmod; disk usage) with random
parameters and a random tree. File contents, modes and modification times are fixed by
the task, so every command's output is the same on every run.

Observation: the output of the last command (stdout, then stderr, then the exit code;
each truncated in the middle past a few thousand characters) and the current directory.
The first observation holds the instruction and the action syntax.

Action: one shell command line or script, after ``Action:`` or in a fenced ```bash block
(the last block; an ``Action:`` line after it wins). It runs with ``bash`` in the
sandbox (no network, a private writable work dir, the system read-only, limits on wall
time, memory, processes, file and output size), starting in the directory where the
last command ended: ``cd`` persists, shell variables do not. ``submit`` ends a
file-system task; ``submit <answer>`` ends a question (a number, a path, a line of text,
or several paths separated by spaces). Anything else is a shell command; an empty
command, one over 100,000 bytes or with a NUL character, and one whose status is 126 or
127 (not executable, command not found) is an invalid action, its output still shown.

Reward: 1 on a successful submit, else 0 (the score is 0 until the episode ends).
Questions compare the submitted answer with the generator's: integers exactly, money to
the cent, paths as sets (``./`` and the absolute work-dir prefix allowed), text exactly
(surrounding quotes stripped). File-system tasks compare the whole tree under the work
dir with the expected one: the same paths (files, directories, links), the same file
contents, and for permission tasks the same mode bits; a ``.gz`` file the task asks for
is compared by its uncompressed content and a ``.tar.gz`` archive by its members
(regular files, names relative to the work dir, ``./`` allowed). Modification times
and owners are not compared. Leaving extra files behind fails the task.

Termination: a ``submit``. Truncation comes from the registered step limit (30).

Oracle: the generator's command sequence, then ``submit`` (with the answer for
questions). It follows the file-system state: a tree the plan does not know (another
command changed it) is first restored to the generated tree by a command that empties
the work dir and unpacks the task's files from an inline base64 tar, and a ``cd`` back
to the work dir comes first when the agent has left it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import random
import re
import shlex
import stat
import tarfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from agentgym.core import InvalidAction, TextEnv, quote
from agentgym.environments.code import BASH_SPLITS
from agentgym.sandbox import WORK, Limits, Sandbox

# ---- limits and output -----------------------------------------------------------------------

#: Limits of one agent command (wall 10 s as in the issue; the rest generous for shell work).
COMMAND_LIMITS = Limits(wall_s=10.0, cpu_s=10.0, memory_mb=1024, processes=128, file_size_mb=64, output_bytes=1_000_000)
#: Longest command accepted, in UTF-8 bytes (an argument to ``bash`` must stay below 128 KiB).
MAX_COMMAND_BYTES = 100_000
#: How much of stdout and of stderr an observation shows (head and tail around an elision).
STDOUT_CHARS = 4_000
STDERR_CHARS = 2_000
#: At most this many entries are scanned when the work dir is checked.
MAX_SCAN_ENTRIES = 20_000
MAX_READ_BYTES = 64 << 20

_CWD_MARK = "\x1eAGENTGYM-CWD\x1e"
#: Runs the agent's command in the directory where the last one ended, then reports where it ended.
_WRAPPER = (
    'cd -- "$1" 2>/dev/null || cd -- "$2"; umask 022; eval "$3"; __agentgym_status=$?; '
    f"printf '\\n{_CWD_MARK}%s' \"$PWD\"; exit $__agentgym_status"
)


def elide(text: str, limit: int) -> str:
    """``text`` cut in the middle to at most about ``limit`` characters, saying how much went."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]}\n[... {len(text) - head - tail} characters omitted ...]\n{text[-tail:]}"


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


# ---- tasks -------------------------------------------------------------------------------------


@dataclass
class BashTask:
    """A generated task: the instruction, the oracle's commands and the ground truth."""

    template: str
    instruction: str
    commands: list[str]
    #: Questions: the answer and how it is compared ("int", "money", "path", "paths", "text").
    answer: str | None = None
    answer_kind: str = ""
    #: File-system tasks: the expected tree, and whether file modes count.
    expected: Tree | None = None
    check_modes: bool = False


Template = Callable[[random.Random, Tree], BashTask]
TEMPLATES: dict[str, Template] = {}


def template(function: Template) -> Template:
    TEMPLATES[function.__name__] = function
    return function


def ensure_log(rng: random.Random, tree: Tree, directory: str = "logs", lines: tuple[int, int] = (20, 60)) -> str:
    """A log file in ``directory`` (an existing one or a new ``app.log``)."""
    existing = [path for path in tree.under(directory, recursive=False) if path.endswith(".log")]
    if existing and rng.random() < 0.5:
        return rng.choice(existing)
    path = f"{directory}/{rng.choice(('app', 'server', 'events'))}.log"
    day = EPOCH_2024 + rng.randint(0, 90) * DAY
    tree.add(path, log_text(rng, rng.randint(*lines), day_string(day)), mtime=day)
    return path


def lines_of(tree: Tree, path: str) -> list[str]:
    return tree.files[path].data.decode().splitlines()


# ---- question templates ------------------------------------------------------------------------


@template
def count_extension(rng: random.Random, tree: Tree) -> BashTask:
    extension = rng.choice(("log", "md", "py", "csv", "sh"))
    if extension == "csv":
        for name in rng.sample(("sales", "stock", "visits", "prices"), rng.randint(1, 3)):
            tree.add(f"data/{rng.choice(('2023', '2024'))}/{name}.csv", "a,b\n1,2\n")
    count = sum(path.endswith(f".{extension}") for path in tree.files)
    return BashTask(
        "count_extension",
        f"How many files with the extension .{extension} are there in the work dir, including all subdirectories?",
        [f"find . -type f -name '*.{extension}' | wc -l"],
        str(count),
        "int",
    )


@template
def largest_file(rng: random.Random, tree: Tree) -> BashTask:
    directory = rng.choice(("logs", "src", "docs", "data"))
    paths = tree.under(directory)
    if not paths:
        tree.add(f"{directory}/index.txt", paragraph(rng, 3))
        paths = tree.under(directory)
    biggest = rng.choice(paths)
    top = max(len(tree.files[path].data) for path in paths if path != biggest) if len(paths) > 1 else 0
    entry = tree.files[biggest]
    if len(entry.data) <= top:  # grow it past the others
        if biggest.endswith(".log"):
            extra = log_text(rng, (top - len(entry.data)) // 30 + 3, "2024-02-02").encode()
        else:
            extra = ("\n" + paragraph(rng, (top - len(entry.data)) // 50 + 2) + "\n").encode()
        entry.data += extra
    return BashTask(
        "largest_file",
        f"Which file under {directory}/ (searching all its subdirectories) is the largest? "
        "Submit its path relative to the work dir.",
        [f"find {directory} -type f -printf '%s %p\\n' | sort -n | tail -3"],
        biggest,
        "path",
    )


@template
def count_lines(rng: random.Random, tree: Tree) -> BashTask:
    path = rng.choice([p for p in tree.files if p.endswith((".log", ".md", ".py", ".csv", ".txt"))])
    count = tree.files[path].data.count(b"\n")
    return BashTask("count_lines", f"How many lines does the file {path} have?", [f"wc -l < {path}"], str(count), "int")


@template
def count_matches(rng: random.Random, tree: Tree) -> BashTask:
    path = ensure_log(rng, tree)
    level = rng.choice(("ERROR", "WARN"))
    count = sum(level in line for line in lines_of(tree, path))
    if count == 0:
        tree.files[path].data += f"2024-02-02 23:59:59 {level:<5} [api] request served in 999ms\n".encode()
        count = 1
    return BashTask(
        "count_matches",
        f"How many lines of {path} contain the word {level}?",
        [f"grep -c '{level}' {path}"],
        str(count),
        "int",
    )


@template
def count_words(rng: random.Random, tree: Tree) -> BashTask:
    path = rng.choice([p for p in tree.files if p.endswith((".md", ".txt"))])
    count = len(tree.files[path].data.split())
    return BashTask(
        "count_words",
        f"How many words (sequences of non-whitespace characters) does {path} contain?",
        [f"wc -w < {path}"],
        str(count),
        "int",
    )


@template
def distinct_ips(rng: random.Random, tree: Tree) -> BashTask:
    ips = sorted(
        {f"10.{rng.randint(0, 3)}.{rng.randint(0, 9)}.{rng.randint(2, 250)}" for _ in range(rng.randint(4, 15))}
    )
    path = f"logs/{rng.choice(('access', 'nginx-access', 'http'))}.log"
    tree.add(path, access_log(rng, rng.randint(30, 90), ips))
    count = len({line.split()[0] for line in lines_of(tree, path)})
    return BashTask(
        "distinct_ips",
        f"How many distinct client IP addresses (the first field of each line) appear in {path}?",
        [f"cut -d' ' -f1 {path} | sort -u | wc -l"],
        str(count),
        "int",
    )


@template
def most_frequent(rng: random.Random, tree: Tree) -> BashTask:
    customers = unique_names(rng, rng.randint(4, 8))
    text, rows = orders_csv(rng, rng.randint(15, 40), customers)
    counts = Counter(row[1] for row in rows)
    (winner, top), *rest = counts.most_common() + [("", 0)]
    if rest[0][1] == top:  # make the most frequent customer unique
        rows.append([str(5000 + len(rows)), winner, "10.00", "paid"])
        text += ",".join(rows[-1]) + "\n"
    tree.add("data/orders.csv", text)
    return BashTask(
        "most_frequent",
        "In data/orders.csv, which customer (the 'customer' column) placed the most orders? Submit the name.",
        ["tail -n +2 data/orders.csv | cut -d, -f2 | sort | uniq -c | sort -rn | head -3"],
        winner,
        "text",
    )


@template
def money_total(rng: random.Random, tree: Tree) -> BashTask:
    text, rows = orders_csv(rng, rng.randint(12, 40), unique_names(rng, 6))
    status = rng.choice(STATUSES)
    if not any(row[3] == status for row in rows):
        rows[0][3] = status
        text = "order_id,customer,amount,status\n" + "".join(",".join(row) + "\n" for row in rows)
    tree.add("data/orders.csv", text)
    cents = sum(int(row[2].replace(".", "")) for row in rows if row[3] == status)
    return BashTask(
        "money_total",
        f"What is the total amount of the orders whose status is '{status}' in data/orders.csv? "
        "Submit the number with two decimals (e.g. 123.45).",
        [f'awk -F, \'NR > 1 && $4 == "{status}" {{ total += $3 }} END {{ printf "%.2f\\n", total }}\' data/orders.csv'],
        f"{cents // 100}.{cents % 100:02d}",
        "money",
    )


@template
def json_field(rng: random.Random, tree: Tree) -> BashTask:
    text, users = users_json(rng, rng.randint(5, 12))
    tree.add("data/users.json", text)
    user = rng.choice(users)
    code = f'import json; print([u["email"] for u in json.load(open("data/users.json")) if u["id"] == {user["id"]}])'
    return BashTask(
        "json_field",
        f"data/users.json holds a list of users. What is the email address of the user whose id is {user['id']}?",
        [f"python3 -c {shlex.quote(code)}"],
        user["email"],
        "text",
    )


@template
def total_size(rng: random.Random, tree: Tree) -> BashTask:
    directory = rng.choice(("logs", "src", "docs", "assets", "data"))
    total = sum(len(tree.files[path].data) for path in tree.under(directory))
    return BashTask(
        "total_size",
        f"What is the total size in bytes of all regular files under {directory}/ (recursively)? "
        "Count file sizes only, not directories.",
        [f"find {directory} -type f -printf '%s\\n' | awk '{{ total += $1 }} END {{ print total }}'"],
        str(total),
        "int",
    )


def _spread_mtimes(rng: random.Random, tree: Tree, paths: list[str], threshold: int) -> list[str]:
    """Set the mtimes of ``paths`` at least three days either side of ``threshold``; return the older ones."""
    older = rng.sample(paths, rng.randint(1, len(paths) - 1))
    for path in paths:
        offset = rng.randint(3, 200) * DAY + rng.randint(0, DAY - 1)
        tree.files[path].mtime = threshold - offset if path in older else threshold + offset
    return sorted(older)


def _dated_files(rng: random.Random, tree: Tree, directory: str) -> list[str]:
    for index in range(rng.randint(3, 6)):
        name = f"{rng.choice(('report', 'dump', 'export', 'snapshot'))}_{index}.{rng.choice(('txt', 'csv', 'dat'))}"
        tree.add(f"{directory}/{name}", paragraph(rng, rng.randint(1, 3)) + "\n")
    return tree.under(directory)


@template
def old_files(rng: random.Random, tree: Tree) -> BashTask:
    directory = rng.choice(("archive", "backups", "exports"))
    threshold = EPOCH_2024 + rng.randint(-100, 100) * DAY
    older = _spread_mtimes(rng, tree, _dated_files(rng, tree, directory), threshold)
    date = day_string(threshold)
    return BashTask(
        "old_files",
        f"Which files under {directory}/ were last modified before {date}? Submit their paths relative to the "
        "work dir, separated by spaces. (No file was modified within a day of that date.)",
        [f"find {directory} -type f ! -newermt {date}"],
        " ".join(older),
        "paths",
    )


@template
def big_files(rng: random.Random, tree: Tree) -> BashTask:
    kib = rng.choice((2, 4, 8))
    for index in range(rng.randint(1, 3)):
        day = EPOCH_2024 + rng.randint(0, 90) * DAY
        tree.add(
            f"logs/archive/big_{index}.log", log_text(rng, kib * 1024 // 45 + rng.randint(40, 80), day_string(day))
        )
    for entry in tree.files.values():  # keep sizes away from the threshold
        if abs(len(entry.data) - kib * 1024) < 64:
            entry.data += b"x" * 100 + b"\n"
    bigger = sorted(path for path, entry in tree.files.items() if len(entry.data) > kib * 1024)
    return BashTask(
        "big_files",
        f"Which files anywhere in the work dir are larger than {kib} KiB ({kib * 1024} bytes)? Submit their paths "
        "relative to the work dir, separated by spaces.",
        [f"find . -type f -size +{kib * 1024}c"],
        " ".join(bigger),
        "paths",
    )


@template
def empty_files(rng: random.Random, tree: Tree) -> BashTask:
    for _ in range(rng.randint(1, 5)):
        directory = rng.choice(sorted(tree.dirs))
        tree.add(f"{directory}/{rng.choice(('placeholder', 'empty', 'lock', 'stamp'))}{rng.randint(1, 99)}.txt", b"")
    count = sum(not entry.data for entry in tree.files.values())
    return BashTask(
        "empty_files",
        "How many empty regular files (size 0) are there in the work dir, including all subdirectories?",
        ["find . -type f -empty | wc -l"],
        str(count),
        "int",
    )


@template
def nth_line(rng: random.Random, tree: Tree) -> BashTask:
    path = ensure_log(rng, tree, lines=(20, 60))
    lines = lines_of(tree, path)
    number = rng.randint(2, len(lines))
    return BashTask(
        "nth_line",
        f"What is line {number} of {path}? Submit the whole line exactly as it appears.",
        [f"sed -n '{number}p' {path}"],
        lines[number - 1],
        "text",
    )


@template
def executable_files(rng: random.Random, tree: Tree) -> BashTask:
    for index in range(rng.randint(2, 4)):
        mode = rng.choice((0o755, 0o744, 0o644, 0o640, 0o700))
        tree.add(f"bin/tool_{index}", f"#!/bin/sh\necho {rng.choice(WORDS)}\n", mode=mode)
    if not any(tree.files[p].mode & 0o100 for p in tree.under("bin")):
        tree.files[tree.under("bin")[0]].mode = 0o755
    executables = [path for path in tree.under("bin") if tree.files[path].mode & 0o100]
    return BashTask(
        "executable_files",
        "Which regular files under bin/ are executable by their owner? Submit their paths relative to the work "
        "dir, separated by spaces.",
        ["find bin -type f -perm -u+x"],
        " ".join(executables),
        "paths",
    )


@template
def max_column(rng: random.Random, tree: Tree) -> BashTask:
    text, rows = users_csv(rng, rng.randint(6, 15))
    tree.add("data/users.csv", text)
    oldest = max(int(row[4]) for row in rows)
    return BashTask(
        "max_column",
        "What is the highest value in the 'age' column of data/users.csv?",
        ["tail -n +2 data/users.csv | cut -d, -f5 | sort -n | tail -1"],
        str(oldest),
        "int",
    )


@template
def count_dirs(rng: random.Random, tree: Tree) -> BashTask:
    for _ in range(rng.randint(0, 3)):
        tree.mkdir(f"{rng.choice(sorted(tree.dirs))}/{rng.choice(('old', 'new', 'misc', 'v2'))}")
    return BashTask(
        "count_dirs",
        "How many directories are there in the work dir, counting all levels of subdirectories but not the work "
        "dir itself?",
        ["find . -mindepth 1 -type d | wc -l"],
        str(len(tree.dirs)),
        "int",
    )


@template
def file_with_string(rng: random.Random, tree: Tree) -> BashTask:
    sources = [path for path in tree.files if path.endswith(".py") and tree.files[path].data]
    path = rng.choice(sources)
    token = f"FIXME({rng.choice(NAMES).lower()}-{rng.randint(10, 99)})"
    lines = lines_of(tree, path)
    lines.insert(rng.randint(1, len(lines)), f"# {token}: {sentence(rng, 3, 6)}")
    tree.files[path].data = ("\n".join(lines) + "\n").encode()
    return BashTask(
        "file_with_string",
        f"Which file under src/ contains the text {token}? Submit its path relative to the work dir.",
        [f"grep -rlF '{token}' src"],
        path,
        "path",
    )


# ---- file-system templates ---------------------------------------------------------------------


def state_task(name: str, instruction: str, commands: list[str], expected: Tree, check_modes: bool = False) -> BashTask:
    note = " Leave everything else unchanged, then submit."
    return BashTask(name, instruction + note, commands, expected=expected, check_modes=check_modes)


@template
def delete_extension(rng: random.Random, tree: Tree) -> BashTask:
    extension = rng.choice(("tmp", "bak"))
    for _ in range(rng.randint(2, 5)):
        directory = rng.choice(sorted(tree.dirs))
        tree.add(f"{directory}/{rng.choice(NOUNS)}_{rng.randint(1, 99)}.{extension}", random_bytes(rng, 40))
    expected = tree.copy()
    for path in list(expected.files):
        if path.endswith(f".{extension}"):
            del expected.files[path]
    return state_task(
        "delete_extension",
        f"Delete every file whose name ends in .{extension}, in the work dir and all its subdirectories.",
        [f"find . -type f -name '*.{extension}' -delete"],
        expected,
    )


@template
def move_extension(rng: random.Random, tree: Tree) -> BashTask:
    extension, target = rng.choice((("jpg", "photos"), ("png", "images"), ("pdf", "documents")))
    source = rng.choice(("downloads", "inbox"))
    for index in range(rng.randint(2, 5)):
        tree.add(f"{source}/{rng.choice(WORDS)}_{index}.{extension}", random_bytes(rng, rng.randint(50, 400)))
    for index in range(rng.randint(1, 3)):
        tree.add(f"{source}/{rng.choice(WORDS)}_{index}.txt", sentence(rng) + "\n")
    tree.add(f"{source}/nested/keep_{rng.randint(1, 9)}.{extension}", random_bytes(rng, 60))
    expected = tree.copy()
    expected.mkdir(target)
    for path in tree.under(source, recursive=False):
        if path.endswith(f".{extension}"):
            expected.files[f"{target}/{os.path.basename(path)}"] = expected.files.pop(path)
    return state_task(
        "move_extension",
        f"Move every .{extension} file that sits directly in {source}/ (not in its subdirectories) into a new "
        f"directory {target}/ at the top of the work dir.",
        [f"mkdir -p {target} && mv {source}/*.{extension} {target}/"],
        expected,
    )


@template
def copy_docs(rng: random.Random, tree: Tree) -> BashTask:
    tree.add(f"docs/guides/{rng.choice(('setup', 'tuning', 'upgrade'))}.md", markdown(rng, "Guide"))
    backup = rng.choice(("backup", "docs_copy", "export"))
    expected = tree.copy()
    expected.mkdir(backup)
    for path in tree.under("docs"):
        if path.endswith(".md"):
            expected.files[f"{backup}/{os.path.basename(path)}"] = File(tree.files[path].data)
    return state_task(
        "copy_docs",
        f"Copy every .md file found anywhere under docs/ into a new directory {backup}/ (all directly in it, keeping "
        "their file names). Keep the originals.",
        [f"mkdir -p {backup} && find docs -type f -name '*.md' -exec cp {{}} {backup}/ \\;"],
        expected,
    )


@template
def rename_extension(rng: random.Random, tree: Tree) -> BashTask:
    old, new = rng.choice((("jpeg", "jpg"), ("htm", "html"), ("yml", "yaml"), ("text", "txt")))
    directory = rng.choice(("media", "site", "export"))
    for index in range(rng.randint(2, 5)):
        tree.add(f"{directory}/{rng.choice(WORDS)}{index}.{old}", sentence(rng) + "\n")
    tree.add(f"{directory}/index.md", markdown(rng, "Index"))
    expected = tree.copy()
    for path in tree.under(directory):
        if path.endswith(f".{old}"):
            expected.files[path[: -len(old)] + new] = expected.files.pop(path)
    return state_task(
        "rename_extension",
        f"Rename every file in {directory}/ whose name ends in .{old} so that it ends in .{new} instead "
        f"(e.g. x.{old} becomes x.{new}).",
        [f'for f in {directory}/*.{old}; do mv "$f" "${{f%.{old}}}.{new}"; done'],
        expected,
    )


@template
def lowercase_names(rng: random.Random, tree: Tree) -> BashTask:
    directory = rng.choice(("Reports", "uploads", "scans"))
    names = set()
    while len(names) < rng.randint(3, 6):
        stem = "_".join(rng.sample(WORDS, 2))
        stem = "".join(c.upper() if rng.random() < 0.4 else c for c in stem)
        names.add(f"{stem}.{rng.choice(('PDF', 'Txt', 'csv', 'DOC'))}")
    folded = {name.lower() for name in names}
    if len(folded) < len(names) or not any(name != name.lower() for name in names):
        names = {name.upper() for name in folded}
    for name in sorted(names):
        tree.add(f"{directory}/{name}", sentence(rng) + "\n")
    expected = tree.copy()
    for name in names:
        expected.files[f"{directory}/{name.lower()}"] = expected.files.pop(f"{directory}/{name}")
    return state_task(
        "lowercase_names",
        f"Rename every file in {directory}/ so that its name is all lower case (e.g. Report_A.PDF becomes "
        "report_a.pdf). Keep the directory's own name.",
        [
            f'for f in {directory}/*; do b=$(basename "$f"); l=$(printf "%s" "$b" | tr "A-Z" "a-z"); '
            f'[ "$b" = "$l" ] || mv "{directory}/$b" "{directory}/$l"; done'
        ],
        expected,
    )


@template
def replace_host(rng: random.Random, tree: Tree) -> BashTask:
    new = rng.choice(("db.internal", "10.0.0.5", "prod-db-1", "api.example.com"))
    expected = tree.copy()
    entry = expected.files["config/app.ini"]
    entry.data = entry.data.replace(b"localhost", new.encode())
    return state_task(
        "replace_host",
        f"In config/app.ini, replace every occurrence of localhost with {new}.",
        [f"sed -i 's/localhost/{sed_escape(new)}/g' config/app.ini"],
        expected,
    )


@template
def bump_version(rng: random.Random, tree: Tree) -> BashTask:
    major, minor = rng.randint(0, 3), rng.randint(0, 9)
    old, new = f"v{major}.{minor}.{rng.randint(0, 9)}", f"v{major}.{minor + 1}.0"
    for topic in rng.sample(("release", "upgrade", "intro"), 2):
        tree.add(f"docs/{topic}.md", markdown(rng, topic.capitalize(), version=old))
    tree.add("docs/notes/history.md", markdown(rng, "History", version=old) + f"Previous: {old}\n")
    tree.add("CHANGELOG.txt", f"{old}: {sentence(rng)}\n")  # not under docs/: stays
    expected = tree.copy()
    for path in tree.under("docs"):
        if path.endswith(".md"):
            expected.files[path].data = expected.files[path].data.replace(old.encode(), new.encode())
    return state_task(
        "bump_version",
        f"Replace the version string {old} with {new} in every .md file under docs/ (in all subdirectories).",
        [f"find docs -type f -name '*.md' -exec sed -i 's/{sed_escape(old)}/{sed_escape(new)}/g' {{}} +"],
        expected,
    )


@template
def upper_case_file(rng: random.Random, tree: Tree) -> BashTask:
    path = f"{rng.choice(('notes', 'data', 'misc'))}/{rng.choice(('shout', 'banner', 'codes'))}.txt"
    tree.add(path, "\n".join(sentence(rng, 2, 6) for _ in range(rng.randint(3, 8))) + "\n")
    expected = tree.copy()
    expected.files[path].data = expected.files[path].data.upper()
    return state_task(
        "upper_case_file",
        f"Convert every letter in {path} to upper case, in place (the file keeps its name).",
        [f"tr 'a-z' 'A-Z' < {path} > {path}.new && mv {path}.new {path}"],
        expected,
    )


def _word_lines(rng: random.Random, count: int, repeats: int) -> list[str]:
    words = rng.sample(WORDS, count)
    lines = words + rng.choices(words, k=repeats)
    rng.shuffle(lines)
    return lines


@template
def sort_unique(rng: random.Random, tree: Tree) -> BashTask:
    path = f"data/{rng.choice(('tags', 'keywords', 'labels'))}.txt"
    lines = _word_lines(rng, rng.randint(6, 15), rng.randint(2, 8))
    tree.add(path, "\n".join(lines) + "\n")
    expected = tree.copy()
    expected.files[path].data = ("\n".join(sorted(set(lines))) + "\n").encode()
    return state_task(
        "sort_unique",
        f"Sort the lines of {path} alphabetically and remove duplicate lines, in place.",
        [f"LC_ALL=C sort -u -o {path} {path}"],
        expected,
    )


@template
def dedupe_in_order(rng: random.Random, tree: Tree) -> BashTask:
    path = f"data/{rng.choice(('visitors', 'queue', 'emails'))}.txt"
    lines = _word_lines(rng, rng.randint(6, 15), rng.randint(2, 8))
    tree.add(path, "\n".join(lines) + "\n")
    expected = tree.copy()
    expected.files[path].data = ("\n".join(dict.fromkeys(lines)) + "\n").encode()
    return state_task(
        "dedupe_in_order",
        f"Remove the duplicate lines of {path} in place, keeping the first occurrence of each line and the original "
        "order of the lines.",
        [f"awk '!seen[$0]++' {path} > {path}.new && mv {path}.new {path}"],
        expected,
    )


@template
def grep_to_file(rng: random.Random, tree: Tree) -> BashTask:
    path = ensure_log(rng, tree)
    level = rng.choice(("ERROR", "WARN"))
    if not any(level in line for line in lines_of(tree, path)):
        tree.files[path].data += f"2024-02-02 23:59:59 {level:<5} [db] queue depth 7\n".encode()
    out = f"{rng.choice(('errors', 'problems', 'alerts'))}.txt"
    expected = tree.copy()
    expected.add(out, "".join(line + "\n" for line in lines_of(tree, path) if level in line))
    return state_task(
        "grep_to_file",
        f"Write every line of {path} that contains {level} into a new file {out} in the work dir, in their original "
        "order.",
        [f"grep '{level}' {path} > {out}"],
        expected,
    )


@template
def tar_configs(rng: random.Random, tree: Tree) -> BashTask:
    for name in rng.sample(("nginx", "redis", "cron", "ssh", "dns"), rng.randint(2, 4)):
        tree.add(f"etc/{name}/{name}.conf", f"# {name}\nenabled = {rng.choice(('yes', 'no'))}\n")
    tree.add("etc/README", "Configuration files.\n")
    archive = f"{rng.choice(('configs', 'etc-backup', 'settings'))}.tar.gz"
    members = {path: tree.files[path].data for path in tree.under("etc") if path.endswith(".conf")}
    expected = tree.copy()
    expected.files[archive] = File(b"", members=members)
    return state_task(
        "tar_configs",
        f"Create a gzip-compressed tar archive {archive} in the work dir holding every .conf file under etc/, stored "
        "with their paths relative to the work dir (e.g. etc/x/x.conf). Keep the original files.",
        [f"tar -czf {archive} $(find etc -type f -name '*.conf' | sort)"],
        expected,
    )


@template
def gzip_logs(rng: random.Random, tree: Tree) -> BashTask:
    for index in range(rng.randint(2, 4)):
        day = EPOCH_2024 - rng.randint(100, 300) * DAY
        tree.add(f"logs/archive/old-{index}.log", log_text(rng, rng.randint(5, 25), day_string(day)), mtime=day)
    tree.add("logs/archive/index.txt", "old logs\n")
    expected = tree.copy()
    for path in tree.under("logs/archive", recursive=False):
        if path.endswith(".log"):
            entry = expected.files.pop(path)
            expected.files[path + ".gz"] = File(entry.data, gzip=True)
    return state_task(
        "gzip_logs",
        "Compress every .log file in logs/archive/ with gzip, so that each x.log is replaced by x.log.gz.",
        ["gzip logs/archive/*.log"],
        expected,
    )


@template
def make_executable(rng: random.Random, tree: Tree) -> BashTask:
    for index in range(rng.randint(2, 4)):
        tree.add(
            f"scripts/tools/{rng.choice(VERBS)}_{index}.sh", "#!/bin/sh\nexit 0\n", mode=rng.choice((0o644, 0o640))
        )
    tree.add("scripts/README.txt", "Helper scripts.\n")
    expected = tree.copy()
    for path in tree.under("scripts"):
        if path.endswith(".sh"):
            expected.files[path].mode |= 0o111
    return state_task(
        "make_executable",
        "Make every .sh file under scripts/ (in all subdirectories) executable by everyone: add the execute "
        "permission for user, group and others, keeping their other permissions.",
        ["find scripts -type f -name '*.sh' -exec chmod a+x {} +"],
        expected,
        check_modes=True,
    )


@template
def private_files(rng: random.Random, tree: Tree) -> BashTask:
    directory = rng.choice(("secrets", "keys", "private"))
    for index in range(rng.randint(2, 5)):
        tree.add(f"{directory}/{rng.choice(NOUNS)}_{index}.key", random_bytes(rng, 64), mode=rng.choice((0o644, 0o664)))
    expected = tree.copy()
    for path in tree.under(directory):
        expected.files[path].mode &= 0o700
    return state_task(
        "private_files",
        f"Remove every permission of group and others from the files in {directory}/ (e.g. 644 becomes 600); keep "
        "the owner's permissions.",
        [f"chmod go-rwx {directory}/*"],
        expected,
        check_modes=True,
    )


@template
def delete_old(rng: random.Random, tree: Tree) -> BashTask:
    directory = rng.choice(("cache", "spool"))
    threshold = EPOCH_2024 + rng.randint(-100, 100) * DAY
    older = _spread_mtimes(rng, tree, _dated_files(rng, tree, directory), threshold)
    expected = tree.copy()
    for path in older:
        del expected.files[path]
    date = day_string(threshold)
    return state_task(
        "delete_old",
        f"Delete every file under {directory}/ that was last modified before {date}. (No file was modified within "
        "a day of that date.)",
        [f"find {directory} -type f ! -newermt {date} -delete"],
        expected,
    )


@template
def concat_chapters(rng: random.Random, tree: Tree) -> BashTask:
    count = rng.randint(10, 14)
    for number in range(1, count + 1):
        tree.add(f"chapters/ch{number}.txt", f"Chapter {number}\n{paragraph(rng, rng.randint(1, 2))}\n")
    out = rng.choice(("book.txt", "manuscript.txt", "all.txt"))
    expected = tree.copy()
    expected.add(out, b"".join(tree.files[f"chapters/ch{number}.txt"].data for number in range(1, count + 1)))
    return state_task(
        "concat_chapters",
        f"Concatenate chapters/ch1.txt, chapters/ch2.txt, ... up to the last chapter, in numeric order (ch2 before "
        f"ch10), into a new file {out} in the work dir.",
        [f"for i in $(seq 1 {count}); do cat chapters/ch$i.txt; done > {out}"],
        expected,
    )


@template
def extract_column(rng: random.Random, tree: Tree) -> BashTask:
    text, rows = users_csv(rng, rng.randint(5, 12))
    tree.add("data/users.csv", text)
    column = rng.choice(("email", "city", "name"))
    index = ["id", "name", "email", "city", "age"].index(column)
    out = f"{column}s.txt" if column != "city" else "cities.txt"
    expected = tree.copy()
    expected.add(out, "".join(row[index] + "\n" for row in rows))
    return state_task(
        "extract_column",
        f"Write the '{column}' column of data/users.csv (without the header line) into a new file {out} in the work "
        "dir, one value per line, in the original order.",
        [f"tail -n +2 data/users.csv | cut -d, -f{index + 1} > {out}"],
        expected,
    )


@template
def active_users(rng: random.Random, tree: Tree) -> BashTask:
    text, users = users_json(rng, rng.randint(5, 12))
    if not any(user["active"] for user in users):
        users[0]["active"] = True
        text = json.dumps(users, indent=2) + "\n"
    tree.add("data/users.json", text)
    expected = tree.copy()
    expected.add("active.txt", "".join(name + "\n" for name in sorted(u["name"] for u in users if u["active"])))
    code = (
        'import json; print(*sorted(u["name"] for u in json.load(open("data/users.json")) if u["active"]), sep="\\n")'
    )
    return state_task(
        "active_users",
        'data/users.json holds a list of users. Write the names of the users whose "active" field is true into a '
        "new file active.txt in the work dir, one name per line, sorted alphabetically.",
        [f"python3 -c {shlex.quote(code)} > active.txt"],
        expected,
    )


@template
def remove_empty_dirs(rng: random.Random, tree: Tree) -> BashTask:
    made = []
    for _ in range(rng.randint(2, 5)):
        path = f"{rng.choice(sorted(tree.dirs))}/{rng.choice(('old', 'unused', 'tmp2', 'empty'))}"
        if rng.random() < 0.5:
            path += f"/{rng.choice(('a', 'b', 'c'))}"
        if path not in tree.dirs:
            tree.mkdir(path)
            made.append(path)
    expected = tree.copy()
    while True:  # drop empty directories until none is left
        busy = {os.path.dirname(path) for path in expected.files} | {os.path.dirname(d) for d in expected.dirs}
        empty = {d for d in expected.dirs if d not in busy}
        if not empty:
            break
        expected.dirs -= empty
    return state_task(
        "remove_empty_dirs",
        "Remove every empty directory in the work dir, including directories that become empty once their empty "
        "subdirectories are removed. Do not delete any file (empty files stay).",
        ["find . -mindepth 1 -type d -empty -delete"],
        expected,
    )


@template
def crlf_to_lf(rng: random.Random, tree: Tree) -> BashTask:
    path = f"{rng.choice(('data', 'import'))}/{rng.choice(('contacts', 'legacy', 'windows'))}.csv"
    text, _ = users_csv(rng, rng.randint(4, 10))
    tree.add(path, text.replace("\n", "\r\n"))
    expected = tree.copy()
    expected.files[path].data = text.encode()
    return state_task(
        "crlf_to_lf",
        f"{path} has Windows line endings (CRLF). Convert it in place to Unix line endings (LF).",
        [f"sed -i 's/\\r$//' {path}"],
        expected,
    )


@template
def dirs_per_csv(rng: random.Random, tree: Tree) -> BashTask:
    for name in rng.sample(("sales", "stock", "visits", "prices", "returns", "staff"), rng.randint(2, 4)):
        tree.add(f"data/{name}.csv", "a,b\n1,2\n")
    expected = tree.copy()
    for path in tree.under("data", recursive=False):
        if path.endswith(".csv"):
            expected.mkdir(f"reports/{os.path.basename(path)[:-4]}")
    return state_task(
        "dirs_per_csv",
        "For each .csv file directly in data/, create an empty directory under reports/ named after the file "
        "without its extension (data/x.csv gives reports/x).",
        ['for f in data/*.csv; do mkdir -p "reports/$(basename "$f" .csv)"; done'],
        expected,
    )


@template
def top_scores(rng: random.Random, tree: Tree) -> BashTask:
    names = unique_names(rng, rng.randint(8, 16))
    scores = rng.sample(range(10, 1000), len(names))
    tree.add("data/scores.csv", "".join(f"{name},{score}\n" for name, score in zip(names, scores)))
    count = rng.randint(3, 5)
    best = sorted(zip(scores, names), reverse=True)[:count]
    expected = tree.copy()
    expected.add("top.txt", "".join(f"{name},{score}\n" for score, name in best))
    return state_task(
        "top_scores",
        f"data/scores.csv has lines 'name,score'. Write the {count} lines with the highest scores into a new file "
        "top.txt in the work dir, from the highest score down, unchanged.",
        [f"sort -t, -k2,2nr data/scores.csv | head -n {count} > top.txt"],
        expected,
    )


# ---- checking ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One path found in the work dir: ``kind`` is "file", "dir", "link" or "other"."""

    kind: str
    mode: int
    digest: str = ""
    host_path: str = ""


def _read_regular(host_path: str) -> bytes | None:
    """The bytes of a regular file, never following a link nor blocking on a FIFO; ``None`` if unreadable."""
    try:
        fd = os.open(host_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ_BYTES:
            return None
        chunks, size = [], 0
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_READ_BYTES:
                return None
        return b"".join(chunks)
    finally:
        os.close(fd)


def scan(root: str) -> dict[str, Entry] | None:
    """Every path under ``root`` (relative), without following links; ``None`` past the entry limit."""
    found: dict[str, Entry] = {}
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            names = sorted(os.listdir(os.path.join(root, relative)))
        except OSError:
            continue
        for name in names:
            path = f"{relative}/{name}" if relative else name
            host = os.path.join(root, path)
            try:
                info = os.lstat(host)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                found[path] = Entry("dir", stat.S_IMODE(info.st_mode))
                pending.append(path)
            elif stat.S_ISREG(info.st_mode):
                data = _read_regular(host)
                digest = hashlib.sha256(data).hexdigest() if data is not None else "unreadable"
                found[path] = Entry("file", stat.S_IMODE(info.st_mode), digest, host)
            elif stat.S_ISLNK(info.st_mode):
                try:
                    found[path] = Entry("link", 0, os.readlink(host))
                except OSError:
                    found[path] = Entry("link", 0)
            else:
                found[path] = Entry("other", stat.S_IMODE(info.st_mode))
            if len(found) > MAX_SCAN_ENTRIES:
                return None
    return found


def state_digest(root: str) -> str:
    found = scan(root)
    text = "overflow" if found is None else repr(sorted((p, e.kind, e.mode, e.digest) for p, e in found.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def _archive_members(data: bytes) -> dict[str, bytes] | None:
    """The regular files of a .tar.gz (names without a leading ``./``), or ``None`` if it is not one."""
    try:
        members: dict[str, bytes] = {}
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for info in archive:
                if info.isfile():
                    handle = archive.extractfile(info)
                    name = info.name[2:] if info.name.startswith("./") else info.name
                    members[name] = handle.read() if handle else b""
                elif not info.isdir():
                    members[info.name] = b"\0not a regular file"
        return members
    except (tarfile.TarError, OSError, EOFError, ValueError):
        return None


def _gunzip(data: bytes) -> bytes | None:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            return stream.read(MAX_READ_BYTES + 1)
    except (OSError, EOFError, ValueError):
        return None


def compare_tree(root: str, expected: Tree, check_modes: bool) -> list[str]:
    """What differs between the work dir ``root`` and ``expected``: an empty list when they match."""
    found = scan(root)
    if found is None:
        return [f"the work dir holds more than {MAX_SCAN_ENTRIES} entries"]
    wanted = {path: "dir" for path in expected.dirs} | {path: "file" for path in expected.files}
    problems = []
    missing = sorted(set(wanted) - set(found))
    extra = sorted(set(found) - set(wanted))
    if missing:
        problems.append(f"missing: {', '.join(missing[:10])}")
    if extra:
        problems.append(f"unexpected: {', '.join(extra[:10])}")
    changed = []
    for path in sorted(set(wanted) & set(found)):
        entry = found[path]
        if entry.kind != wanted[path]:
            changed.append(f"{path} (a {entry.kind}, expected a {wanted[path]})")
            continue
        if entry.kind == "dir":
            continue
        model = expected.files[path]
        if model.members is not None or model.gzip:
            data = _read_regular(entry.host_path)
            if model.members is not None:
                good = data is not None and _archive_members(data) == model.members
            else:
                good = data is not None and _gunzip(data) == model.data
        else:
            good = entry.digest == hashlib.sha256(model.data).hexdigest()
        if not good:
            changed.append(f"{path} (content)")
        elif check_modes and entry.mode != model.mode:
            changed.append(f"{path} (mode {entry.mode:o}, expected {model.mode:o})")
    if changed:
        problems.append(f"different: {', '.join(changed[:10])}")
    return problems


def _strip_quotes(text: str) -> str:
    text = text.strip()
    while len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        text = text[1:-1].strip()
    return text


def answer_matches(kind: str, submitted: str, truth: str, workdir: str) -> bool:
    """Whether ``submitted`` equals ``truth`` as an answer of type ``kind`` (see the module docstring)."""

    def path(text: str) -> str:
        text = _strip_quotes(text.strip().rstrip(",;"))
        if text.startswith(workdir.rstrip("/") + "/"):
            text = text[len(workdir.rstrip("/")) + 1 :]
        while text.startswith("./"):
            text = text[2:]
        return text

    submitted = submitted.strip()
    if kind == "text":
        return _strip_quotes(submitted) == truth
    tokens = _strip_quotes(submitted).replace(",", " ").split()
    if kind == "paths":
        return {path(token) for token in tokens} == set(truth.split())
    if not tokens:
        return False
    first = tokens[0]
    if kind == "path":
        return len(tokens) == 1 and path(first) == truth
    if kind == "int":
        return re.fullmatch(r"[+-]?\d+", first) is not None and int(first) == int(truth)
    if kind == "money":
        try:
            return abs(float(first.lstrip("$")) - float(truth)) < 0.005
        except ValueError:
            return False
    raise ValueError(f"unknown answer kind {kind!r}")


# ---- the environment ---------------------------------------------------------------------------

_FENCE = re.compile(r"^[ \t]*```[ \t]*(?:bash|sh|shell|console|zsh)?[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
_ACTION = re.compile(r"^[ \t>*_#`-]*action[*_`]*[ \t]*:(.*)$", re.I | re.M)


def extract_command(reply: str) -> str:
    """The shell command in an LLM reply.

    Reasoning up to a closing ``</think>`` is dropped. The command is the text after the last
    ``Action:`` line's colon, unless a fenced ```bash (or ```sh, or plain ```) block comes after
    that line, or that line is empty: then the last block's content. With neither, the whole
    reply. Only surrounding whitespace and one pair of enclosing backticks are removed: quotes
    and a final ``.`` belong to shell syntax.
    """
    end = reply.rfind("</think>")
    body = reply[end + len("</think>") :] if end >= 0 else reply
    blocks = list(_FENCE.finditer(body))
    actions = list(_ACTION.finditer(body))
    action = actions[-1] if actions else None
    if blocks and (action is None or blocks[-1].start() > action.start() or not action.group(1).strip()):
        return blocks[-1].group(1).strip()
    command = (action.group(1) if action else body).strip()
    for fence in ("```", "`"):
        if len(command) > 2 * len(fence) and command.startswith(fence) and command.endswith(fence):
            return command[len(fence) : -len(fence)].strip()
    return command


_SUBMIT = re.compile(r"submit(?:\s+(.*))?", re.I | re.S)
_RANDOM_COMMANDS = ("ls", "ls -a", "pwd", "find . -type f | sort", "find . -type d | sort", "ls -R | head -40")


class BashEnv(TextEnv):
    """Shell tasks in a sandboxed work dir; see the module docstring for the rules."""

    toolset = "bash"  # in tools.yaml

    splits = BASH_SPLITS
    max_observation_chars = 20_000

    def __init__(
        self, limits: Limits | dict | None = None, sandbox_backend: str = "bwrap", render_mode: str | None = None
    ) -> None:
        super().__init__(render_mode)
        self.limits = Limits(**limits) if isinstance(limits, dict) else limits or COMMAND_LIMITS
        self.sandbox_backend = sandbox_backend
        self.sandbox: Sandbox | None = None
        self.task: BashTask | None = None
        self.tree = Tree()
        self.cwd = ""
        self._oracle_states: dict[str, int] = {}
        self._oracle_done = 0
        self._restore = ""

    # ---- text ----

    #: The work dir as commands see it.
    workdir = WORK

    @property
    def action_syntax(self) -> str:
        return (
            "Act with one shell command per reply, after 'Action:' (e.g. 'Action: ls -la') or in a ```bash block "
            "(several lines allowed). It runs in bash; the next command starts where this one ended (cd persists, "
            "variables do not). Each command has 10 seconds. Commands see no network and no stdin.\n"
            "When done, reply 'Action: submit' for a file-system task, or 'Action: submit <answer>' for a question "
            "(several paths: separated by spaces). Submitting ends the episode."
        )

    def _describe(self) -> str:
        return f"Current directory: {self.cwd}"

    # ---- tasks ----

    def template_of(self, task_id: int) -> str:
        """The name of task ``task_id``'s template (the generator's first draw)."""
        names = sorted(TEMPLATES)
        return names[self.task_rng(task_id).randrange(len(names))]

    def make_task(self, task_id: int) -> tuple[BashTask, Tree]:
        """Task ``task_id`` and its initial tree, without a sandbox."""
        rng = self.task_rng(task_id)
        names = sorted(TEMPLATES)
        name = names[rng.randrange(len(names))]  # the first draw: see template_of
        tree = base_tree(rng)
        return TEMPLATES[name](rng, tree), tree

    def _generate(self, task_id: int) -> str:
        task, tree = self.make_task(task_id)
        self.task, self.tree = task, tree
        self._open_sandbox()
        assert self.sandbox is not None
        tree.write(self.sandbox)
        self.cwd = self.workdir
        self._oracle_states = {state_digest(self._root): 0}
        self._oracle_done = 0
        self._restore = ""
        return (
            f"You are in a Linux shell; your work dir is {self.workdir}, holding a small project. "
            f"Task: {task.instruction}"
        )

    @property
    def _root(self) -> str:
        """The work dir's host path."""
        assert self.sandbox is not None
        return str(self.sandbox.workdir)

    def _open_sandbox(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
        self.sandbox = Sandbox(limits=self.limits, backend=self.sandbox_backend)

    # ---- acting ----

    def extract_action(self, reply: str) -> str:
        """The command in a reply: see :func:`extract_command`."""
        return extract_command(reply)

    def _execute(self, command: str) -> str:
        assert self.task is not None and self.sandbox is not None
        if not command.strip():
            raise InvalidAction("the reply holds no command; write 'Action: <command>'.")
        submit = _SUBMIT.fullmatch(command.strip())
        if submit:
            return self._submit((submit.group(1) or "").strip())
        if "\x00" in command:
            raise InvalidAction("a command cannot contain a NUL character.")
        if len(command.encode("utf-8", "surrogatepass")) > MAX_COMMAND_BYTES:
            raise InvalidAction(f"the command is longer than {MAX_COMMAND_BYTES} bytes.")
        plan_index = self._plan_index_for(command)
        status, feedback = self._run(command)
        if plan_index is not None:
            self._advance_plan(plan_index)
        if status in (126, 127):
            raise InvalidAction(f"the shell could not run it (exit code {status}).\n{feedback}")
        return feedback

    def _run(self, command: str) -> tuple[int, str]:
        """Run ``command`` in the sandbox from the current directory; (exit status, observation text)."""
        assert self.sandbox is not None
        try:
            command.encode("utf-8")
        except UnicodeEncodeError:
            command = command.encode("utf-8", "replace").decode("utf-8")
        result = self.sandbox.run(["bash", "-c", _WRAPPER, "bash", self.cwd, self.workdir, command])
        stdout, stderr = result.stdout, result.stderr
        mark = stdout.rfind(_CWD_MARK)
        if mark >= 0:
            cwd = stdout[mark + len(_CWD_MARK) :]
            if cwd.startswith("/") and "\n" not in cwd and len(cwd) < 4096:
                self.cwd = cwd
            stdout = stdout[: mark - 1] if stdout[mark - 1 : mark] == "\n" else stdout[:mark]
        parts = []
        if stdout:
            parts.append(elide(stdout, STDOUT_CHARS).rstrip("\n"))
        if stderr:
            parts.append("[stderr]\n" + elide(stderr, STDERR_CHARS).rstrip("\n"))
        if result.limit_hit:
            parts.append(f"[stopped: the {result.limit_hit} limit was hit]")
        parts.append(f"[exit code {result.exit_code}]")
        return result.exit_code, "\n".join(parts)

    def _submit(self, answer: str) -> str:
        assert self.task is not None and self.sandbox is not None
        task = self.task
        if task.answer is not None:
            if not answer:
                raise InvalidAction("this task asks a question: reply 'Action: submit <answer>'.")
            self.success = answer_matches(task.answer_kind, answer, task.answer, self.workdir)
            verdict = "correct" if self.success else f"wrong (expected {task.answer})"
            feedback = f"You submitted {quote(answer, 200)}: {verdict}."
        else:
            assert task.expected is not None
            problems = compare_tree(self._root, task.expected, task.check_modes)
            self.success = not problems
            feedback = (
                "The work dir is as asked: task solved."
                if self.success
                else ("The work dir is not as asked: " + "; ".join(problems) + ".")
            )
        self.score = 1.0 if self.success else 0.0
        self.terminated = True
        return f"{feedback} The episode is over."

    # ---- oracle ----

    def _plan_index_for(self, command: str) -> int | None:
        """If ``command`` is the oracle's next command for the current state, its index in the plan."""
        assert self.task is not None and self.sandbox is not None
        if command == self._restore_command():
            return -1
        if self.task.answer is not None:
            plan = self.task.commands
            return self._oracle_done if self._oracle_done < len(plan) and plan[self._oracle_done] == command else None
        index = self._oracle_states.get(state_digest(self._root))
        plan = self.task.commands
        return index if index is not None and index < len(plan) and plan[index] == command else None

    def _advance_plan(self, index: int) -> None:
        assert self.task is not None and self.sandbox is not None
        if self.task.answer is not None:
            self._oracle_done = 0 if index < 0 else index + 1
            return
        self._oracle_states[state_digest(self._root)] = 0 if index < 0 else index + 1

    def _restore_command(self) -> str:
        """A command that empties the work dir and unpacks the task's initial tree into it."""
        if not self._restore:
            payload = base64.b64encode(self.tree.tarball()).decode()
            lines = [payload[i : i + 76] for i in range(0, len(payload), 76)]
            self._restore = (
                f"cd {self.workdir} && chmod -R u+rwX . 2>/dev/null; find . -mindepth 1 -delete && "
                "base64 -d <<'AGENTGYM_EOF' | tar -xzpf - --no-same-owner\n" + "\n".join(lines) + "\nAGENTGYM_EOF"
            )
        return self._restore

    def oracle_action(self) -> str:
        """The plan's next command, ``submit`` when it is done; ``cd`` home or a restore first if needed."""
        if self.task is None or self.sandbox is None:
            return "submit"
        task = self.task
        if task.answer is not None:
            if self._oracle_done >= len(task.commands):
                return f"submit {task.answer}"
            return task.commands[self._oracle_done] if self.cwd == self.workdir else f"cd {self.workdir}"
        assert task.expected is not None
        index = self._oracle_states.get(state_digest(self._root))
        if index is None:
            if not compare_tree(self._root, task.expected, task.check_modes):
                return "submit"
            return self._restore_command()
        if index >= len(task.commands):
            return "submit"
        return task.commands[index] if self.cwd == self.workdir else f"cd {self.workdir}"

    def random_action(self, rng: random.Random) -> str:
        """A read-only command: a listing, or a look at a random file of the task (the "random" baseline)."""
        files = sorted(self.tree.files)
        choice = rng.randrange(len(_RANDOM_COMMANDS) + 3)
        if choice < len(_RANDOM_COMMANDS) or not files:
            return _RANDOM_COMMANDS[choice % len(_RANDOM_COMMANDS)]
        path = rng.choice(files)
        return rng.choice((f"head -n 5 {path}", f"wc -l {path}", f"ls -a {os.path.dirname(path) or '.'}"))

    def close(self) -> None:
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None
        super().close()
