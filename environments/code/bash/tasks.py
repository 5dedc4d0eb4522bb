"""Bash's task templates: 18 questions about the tree and 23 changes to make to it.

Each template is a function of the task's generator and its :class:`~.tree.Tree` that
returns a :class:`BashTask`: the instruction, the oracle's commands and either the
answer (questions) or the expected tree (file-system tasks). :func:`template` registers
it in :data:`TEMPLATES` under its function name.
"""

from __future__ import annotations

import json
import os
import random
import shlex
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from agentgym.environments.code.bash.tree import (
    DAY,
    EPOCH_2024,
    NAMES,
    NOUNS,
    STATUSES,
    VERBS,
    WORDS,
    File,
    Tree,
    access_log,
    day_string,
    log_text,
    markdown,
    orders_csv,
    paragraph,
    random_bytes,
    sed_escape,
    sentence,
    unique_names,
    users_csv,
    users_json,
)


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
