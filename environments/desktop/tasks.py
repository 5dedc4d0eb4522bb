"""Desktop task templates: setup files, an instruction, a scripted oracle and a state checker.

A template is a function ``(rng) -> Task``. The task says which app to open (the
terminal, the text editor, the file manager or the spreadsheet), which files the home
folder starts with, the oracle's keyboard-driven script, and a checker that inspects
the resulting files (never the pixels): contents, names, permissions, archives, and the
saved spreadsheet read with :func:`read_gnumeric` (Gnumeric's gzip XML for the cell
contents, ``ssconvert`` to CSV for computed values).
"""

from __future__ import annotations

import csv
import gzip
import os
import random
import shlex
import stat
import subprocess
import tarfile
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: What the checkers answer: None when the task is done, else why not.
Verdict = str | None

_WORD_LIST = (
    "apple amber birch cedar delta ember falcon garnet harbor iris jasper kettle lagoon maple nectar orchid pepper "
    "quartz raven saffron tundra umber velvet willow xenon yarrow zephyr bronze copper dune fjord glacier hazel indigo "
    "juniper kelp lotus meadow nimbus olive prairie quill ridge sierra timber upland valley walnut yucca zinnia"
)
WORDS = tuple(_WORD_LIST.split())
#: Fixed modification time of the files a task starts with (the file manager shows it).
FILE_TIME = 1_700_000_000
APPS = ("terminal", "editor", "files", "spreadsheet")


@dataclass
class Task:
    """One task: see the module docstring. ``sheet`` (rows of cells) becomes ``book.gnumeric``."""

    template: str
    app: str
    instruction: str
    oracle: list[str]
    check: Callable[[Path], Verdict]
    files: dict[str, str] = field(default_factory=dict)  # path -> content; a path ending in "/" is a folder
    open: str | None = None
    sheet: list[list[str]] | None = None

    def key(self) -> str:
        """A content key (for assigning tasks to splits)."""
        return f"{self.template}|{self.instruction}|{sorted(self.files.items())}|{self.sheet}"


def set_up(task: Task, home: Path) -> None:
    """Write the task's files into ``home`` (folders, files, the spreadsheet), all with one fixed mtime."""
    for relative, content in task.files.items():
        path = home / relative
        if relative.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        if relative.endswith(".sh"):
            path.chmod(0o644)
    if task.sheet is not None:
        write_gnumeric(task.sheet, home / "book.gnumeric")
    for relative in [*task.files, *(["book.gnumeric"] if task.sheet is not None else [])]:
        os.utime(home / relative, (FILE_TIME, FILE_TIME))


# ---- the spreadsheet file -----------------------------------------------------------------


def write_gnumeric(rows: list[list[str]], path: Path) -> None:
    """Make a Gnumeric workbook at ``path`` holding ``rows`` (with ``ssconvert``)."""
    with tempfile.TemporaryDirectory(prefix="agentgym-sheet-") as folder:
        source = Path(folder) / "book.csv"
        with source.open("w", newline="") as stream:
            csv.writer(stream).writerows(rows)
        subprocess.run(["ssconvert", str(source), str(path)], capture_output=True, check=True, timeout=30)


def read_gnumeric(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(cell contents as typed, e.g. ``"=SUM(B2:B4)"``; computed values) by cell name such as ``"B5"``."""
    contents: dict[str, str] = {}
    namespace = "{http://www.gnumeric.org/v10.dtd}"
    with gzip.open(path) as stream:
        root = ElementTree.parse(stream).getroot()
    sheet = root.find(f"{namespace}Sheets/{namespace}Sheet")
    if sheet is not None:
        for cell in sheet.iter(f"{namespace}Cell"):
            contents[cell_name(int(cell.get("Row", 0)), int(cell.get("Col", 0)))] = cell.text or ""
    with tempfile.TemporaryDirectory(prefix="agentgym-sheet-") as folder:
        target = Path(folder) / "values.csv"
        subprocess.run(["ssconvert", str(path), str(target)], capture_output=True, check=True, timeout=30)
        with target.open(newline="") as stream:
            rows = list(csv.reader(stream))
    values = {cell_name(r, c): value for r, row in enumerate(rows) for c, value in enumerate(row) if value != ""}
    return contents, values


def cell_name(row: int, column: int) -> str:
    """``cell_name(0, 1) == "B1"`` (columns A..Z)."""
    return f"{chr(ord('A') + column)}{row + 1}"


def goto(row: int, column: int) -> str:
    """The oracle's key action that selects a cell from anywhere."""
    return 'key("' + " ".join(["ctrl+Home", *["Right"] * column, *["Down"] * row]) + '")'


def type_action(text: str) -> str:
    return f"type({text!r})"


# ---- checkers -----------------------------------------------------------------------------


def read(home: Path, relative: str) -> str | None:
    try:
        return (home / relative).read_text(errors="replace")
    except (OSError, ValueError):
        return None


def file_is(relative: str, expected: str) -> Callable[[Path], Verdict]:
    """The file holds ``expected`` (ignoring trailing whitespace at the end)."""

    def check(home: Path) -> Verdict:
        content = read(home, relative)
        if content is None:
            return f"~/{relative} does not exist"
        if content.rstrip() != expected.rstrip():
            return f"~/{relative} holds {content[:200]!r}, expected {expected[:200]!r}"
        return None

    return check


def exists(relative: str, directory: bool = False) -> Callable[[Path], Verdict]:
    def check(home: Path) -> Verdict:
        path = home / relative
        ok = path.is_dir() if directory else path.is_file()
        return None if ok else f"~/{relative} is not a {'folder' if directory else 'file'}"

    return check


def absent(relative: str) -> Callable[[Path], Verdict]:
    return lambda home: None if not os.path.lexists(home / relative) else f"~/{relative} still exists"


def all_of(*checks: Callable[[Path], Verdict]) -> Callable[[Path], Verdict]:
    def check(home: Path) -> Verdict:
        for one in checks:
            verdict = one(home)
            if verdict is not None:
                return verdict
        return None

    return check


def sheet_has(expected: dict[str, str], formulas: tuple[str, ...] = ()) -> Callable[[Path], Verdict]:
    """The saved book's computed values equal ``expected``; the cells in ``formulas`` hold formulas."""

    def check(home: Path) -> Verdict:
        try:
            contents, values = read_gnumeric(home / "book.gnumeric")
        except (OSError, EOFError, ElementTree.ParseError, subprocess.SubprocessError) as error:
            return f"~/book.gnumeric cannot be read: {error}"
        for cell, value in expected.items():
            got = values.get(cell, "")
            if not _same_value(got, value):
                return f"cell {cell} holds {got!r}, expected {value!r}"
        for cell in formulas:
            if not contents.get(cell, "").startswith("="):
                return f"cell {cell} holds no formula"
        return None

    return check


def _same_value(got: str, expected: str) -> bool:
    try:
        return abs(float(got) - float(expected)) < 1e-6
    except ValueError:
        return got.strip() == expected.strip()


# ---- parameters ---------------------------------------------------------------------------


def words(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct words, no one a prefix of another (the file manager's type-ahead)."""
    chosen: list[str] = []
    while len(chosen) < count:
        word = rng.choice(WORDS)
        if not any(other.startswith(word[:2]) or word.startswith(other[:2]) for other in chosen):
            chosen.append(word)
    return chosen


def lines_of(rng: random.Random, count: int) -> list[str]:
    return [" ".join(rng.sample(WORDS, rng.randint(2, 4))) for _ in range(count)]


def numbers(rng: random.Random, count: int) -> list[int]:
    return [rng.randint(1, 99) for _ in range(count)]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, rng.randint(3, 6))).capitalize() + "."


def terminal(template: str, instruction: str, command: str, check, files: dict[str, str] | None = None) -> Task:
    """A terminal task: the oracle types ``command`` and Enter."""
    oracle = [type_action(command + "\n"), "wait(0.5)", "done()"]
    return Task(template, "terminal", f"Using the terminal, {instruction}", oracle, check, files or {})


def editor(template: str, instruction: str, relative: str, before: str, after: str, oracle: list[str]) -> Task:
    """An editor task on ``relative`` (opened in the editor); the file must end up holding ``after``."""
    return Task(
        template,
        "editor",
        f"In the text editor, {instruction} Save the file.",
        [*oracle, 'key("ctrl+s")', "done()"],
        file_is(relative, after),
        {relative: before},
        open=relative,
    )


def retype(relative: str, before: str, after: str, template: str, instruction: str) -> Task:
    """An editor task whose oracle selects all and types the new text."""
    return editor(template, instruction, relative, before, after, ['key("ctrl+a")', type_action(after)])


# ---- terminal templates -------------------------------------------------------------------


def t_make_folder(rng: random.Random) -> Task:
    name = rng.choice(WORDS) + "_" + rng.choice(WORDS)
    return terminal(
        "make_folder",
        f"create a folder named {name} in your home folder (~).",
        f"mkdir {name}",
        exists(name, directory=True),
    )


def t_make_nested_folders(rng: random.Random) -> Task:
    path = "/".join(rng.sample(WORDS, 3))
    return terminal(
        "make_nested_folders", f"create the nested folders ~/{path}.", f"mkdir -p {path}", exists(path, directory=True)
    )


def t_write_line(rng: random.Random) -> Task:
    name, text = rng.choice(WORDS) + ".txt", sentence(rng)
    return terminal(
        "write_line",
        f"create the file ~/{name} containing exactly the line: {text}",
        f"echo {shlex.quote(text)} > {name}",
        file_is(name, text + "\n"),
    )


def t_copy_file(rng: random.Random) -> Task:
    source, target = (word + ".txt" for word in words(rng, 2))
    content = "\n".join(lines_of(rng, 3)) + "\n"
    return terminal(
        "copy_file",
        f"copy ~/{source} to ~/{target}.",
        f"cp {source} {target}",
        all_of(file_is(target, content), file_is(source, content)),
        {source: content},
    )


def t_move_into_folder(rng: random.Random) -> Task:
    name, folder = words(rng, 2)
    content = sentence(rng) + "\n"
    return terminal(
        "move_into_folder",
        f"move ~/{name}.txt into the folder ~/{folder}.",
        f"mv {name}.txt {folder}/",
        all_of(file_is(f"{folder}/{name}.txt", content), absent(f"{name}.txt")),
        {f"{name}.txt": content, f"{folder}/": ""},
    )


def t_rename_file(rng: random.Random) -> Task:
    old, new = words(rng, 2)
    content = sentence(rng) + "\n"
    return terminal(
        "rename_file",
        f"rename ~/{old}.txt to ~/{new}.txt.",
        f"mv {old}.txt {new}.txt",
        all_of(file_is(f"{new}.txt", content), absent(f"{old}.txt")),
        {f"{old}.txt": content},
    )


def t_delete_file(rng: random.Random) -> Task:
    doomed, kept = words(rng, 2)
    files = {f"{doomed}.log": sentence(rng) + "\n", f"{kept}.log": sentence(rng) + "\n"}
    return terminal(
        "delete_file",
        f"delete ~/{doomed}.log and keep ~/{kept}.log.",
        f"rm {doomed}.log",
        all_of(absent(f"{doomed}.log"), file_is(f"{kept}.log", files[f"{kept}.log"])),
        files,
    )


def t_count_lines(rng: random.Random) -> Task:
    lines = lines_of(rng, rng.randint(3, 12))
    return terminal(
        "count_lines",
        "write the number of lines of ~/data.txt into ~/count.txt.",
        "wc -l < data.txt > count.txt",
        file_is("count.txt", str(len(lines))),
        {"data.txt": "\n".join(lines) + "\n"},
    )


def t_sort_lines(rng: random.Random) -> Task:
    lines = rng.sample(WORDS, rng.randint(4, 9))
    return terminal(
        "sort_lines",
        "write the lines of ~/names.txt sorted alphabetically into ~/sorted.txt.",
        "sort names.txt > sorted.txt",
        file_is("sorted.txt", "\n".join(sorted(lines))),
        {"names.txt": "\n".join(lines) + "\n"},
    )


def t_grep_lines(rng: random.Random) -> Task:
    lines = lines_of(rng, 8)
    word = rng.choice(" ".join(lines).split())
    matching = [line for line in lines if word in line]
    return terminal(
        "grep_lines",
        f"write the lines of ~/notes.txt that contain {word!r} into ~/matches.txt.",
        f"grep {word} notes.txt > matches.txt",
        file_is("matches.txt", "\n".join(matching)),
        {"notes.txt": "\n".join(lines) + "\n"},
    )


def t_uppercase(rng: random.Random) -> Task:
    text = "\n".join(lines_of(rng, 3))
    return terminal(
        "uppercase",
        "write ~/quiet.txt in upper case into ~/loud.txt.",
        "tr a-z A-Z < quiet.txt > loud.txt",
        file_is("loud.txt", text.upper()),
        {"quiet.txt": text + "\n"},
    )


def t_sum_numbers(rng: random.Random) -> Task:
    values = numbers(rng, rng.randint(3, 8))
    return terminal(
        "sum_numbers",
        "write the sum of the numbers in ~/numbers.txt (one per line) into ~/total.txt.",
        "awk '{s += $1} END {print s}' numbers.txt > total.txt",
        file_is("total.txt", str(sum(values))),
        {"numbers.txt": "\n".join(map(str, values)) + "\n"},
    )


def t_make_executable(rng: random.Random) -> Task:
    name = rng.choice(WORDS) + ".sh"

    def check(home: Path) -> Verdict:
        path = home / name
        return None if path.is_file() and path.stat().st_mode & stat.S_IXUSR else f"~/{name} is not executable"

    return terminal(
        "make_executable", f"make ~/{name} executable.", f"chmod +x {name}", check, {name: "#!/bin/sh\necho hello\n"}
    )


def t_archive_folder(rng: random.Random) -> Task:
    folder, archive = words(rng, 2)
    files = {f"{folder}/{word}.txt": sentence(rng) + "\n" for word in rng.sample(WORDS, 2)}

    def check(home: Path) -> Verdict:
        try:
            with tarfile.open(home / f"{archive}.tar.gz", "r:gz") as tar:
                names = {name.removeprefix("./") for name in tar.getnames()}
        except (OSError, tarfile.TarError) as error:
            return f"~/{archive}.tar.gz is not a gzip tar archive: {error}"
        missing = sorted(set(files) - names)
        return f"the archive lacks {missing}" if missing else None

    return terminal(
        "archive_folder",
        f"pack the folder ~/{folder} into the gzip tar archive ~/{archive}.tar.gz.",
        f"tar czf {archive}.tar.gz {folder}",
        check,
        files,
    )


def t_symlink(rng: random.Random) -> Task:
    target, link = words(rng, 2)
    content = sentence(rng) + "\n"

    def check(home: Path) -> Verdict:
        path = home / link
        if not path.is_symlink():
            return f"~/{link} is not a symbolic link"
        return None if path.resolve() == (home / f"{target}.txt").resolve() else f"~/{link} points elsewhere"

    return terminal(
        "symlink",
        f"create a symbolic link ~/{link} that points to ~/{target}.txt.",
        f"ln -s {target}.txt {link}",
        check,
        {f"{target}.txt": content},
    )


def t_head_lines(rng: random.Random) -> Task:
    lines, count = lines_of(rng, 10), rng.randint(2, 5)
    return terminal(
        "head_lines",
        f"write the first {count} lines of ~/log.txt into ~/top.txt.",
        f"head -n {count} log.txt > top.txt",
        file_is("top.txt", "\n".join(lines[:count])),
        {"log.txt": "\n".join(lines) + "\n"},
    )


def t_unique_lines(rng: random.Random) -> Task:
    distinct = rng.sample(WORDS, 4)
    lines = [rng.choice(distinct) for _ in range(10)]
    return terminal(
        "unique_lines",
        "write the distinct lines of ~/tags.txt, sorted, into ~/unique.txt.",
        "sort -u tags.txt > unique.txt",
        file_is("unique.txt", "\n".join(sorted(set(lines)))),
        {"tags.txt": "\n".join(lines) + "\n"},
    )


def t_touch_files(rng: random.Random) -> Task:
    names = [word + ".md" for word in words(rng, 3)]
    return terminal(
        "touch_files",
        f"create the empty files {', '.join('~/' + n for n in names)}.",
        "touch " + " ".join(names),
        all_of(*(file_is(name, "") for name in names)),
    )


def t_count_words(rng: random.Random) -> Task:
    text = "\n".join(lines_of(rng, 4))
    return terminal(
        "count_words",
        "write the number of words in ~/essay.txt into ~/words.txt.",
        "wc -w < essay.txt > words.txt",
        file_is("words.txt", str(len(text.split()))),
        {"essay.txt": text + "\n"},
    )


# ---- editor templates ---------------------------------------------------------------------


def e_write_text(rng: random.Random) -> Task:
    name, text = rng.choice(WORDS) + ".txt", sentence(rng)
    return editor(
        "write_text", f"~/{name} is open and empty. Type exactly: {text}", name, "", text, [type_action(text)]
    )


def e_append_line(rng: random.Random) -> Task:
    lines, extra = lines_of(rng, 3), sentence(rng)
    before = "\n".join(lines)
    return editor(
        "append_line",
        f"add the line {extra!r} at the end of ~/list.txt.",
        "list.txt",
        before,
        before + "\n" + extra,
        ['key("ctrl+End")', type_action("\n" + extra)],
    )


def e_prepend_line(rng: random.Random) -> Task:
    lines, title = lines_of(rng, 3), "# " + rng.choice(WORDS).capitalize()
    before = "\n".join(lines)
    return editor(
        "prepend_line",
        f"insert the line {title!r} at the top of ~/readme.txt.",
        "readme.txt",
        before,
        title + "\n" + before,
        ['key("ctrl+Home")', type_action(title + "\n")],
    )


def e_replace_word(rng: random.Random) -> Task:
    old, new = words(rng, 2)
    lines = [f"{line} {old}" if index % 2 == 0 else line for index, line in enumerate(lines_of(rng, 4))]
    before = "\n".join(lines)
    return retype(
        "story.txt",
        before,
        before.replace(old, new),
        "replace_word",
        f"replace every {old!r} in ~/story.txt with {new!r}.",
    )


def e_delete_line(rng: random.Random) -> Task:
    lines = lines_of(rng, 5)
    doomed = rng.randrange(5)
    before = "\n".join(lines)
    after = "\n".join(line for index, line in enumerate(lines) if index != doomed)
    return retype("todo.txt", before, after, "delete_line", f"delete the line {lines[doomed]!r} from ~/todo.txt.")


def e_sort_lines(rng: random.Random) -> Task:
    lines = rng.sample(WORDS, 6)
    return retype(
        "words.txt",
        "\n".join(lines),
        "\n".join(sorted(lines)),
        "sort_lines",
        "sort the lines of ~/words.txt alphabetically.",
    )


def e_uppercase(rng: random.Random) -> Task:
    lines = lines_of(rng, 3)
    index = rng.randrange(3)
    after = "\n".join(line.upper() if i == index else line for i, line in enumerate(lines))
    return retype(
        "poem.txt",
        "\n".join(lines),
        after,
        "uppercase_line",
        f"turn the line {lines[index]!r} of ~/poem.txt into upper case.",
    )


def e_fix_typo(rng: random.Random) -> Task:
    word = rng.choice([w for w in WORDS if len(w) > 4])
    typo = word[:2] + word[3] + word[2] + word[4:]
    text = sentence(rng).rstrip(".") + f" {typo}."
    return retype(
        "draft.txt",
        text,
        text.replace(typo, word),
        "fix_typo",
        f"fix the misspelled word {typo!r} in ~/draft.txt (it should be {word!r}).",
    )


def e_save_as(rng: random.Random) -> Task:
    text, name = sentence(rng), rng.choice(WORDS) + "_copy.txt"
    task = Task(
        "save_as",
        "editor",
        f"In the text editor, save ~/original.txt under the new name ~/{name} (Save As).",
        ['key("ctrl+shift+s")', 'key("ctrl+a")', type_action(name + "\n"), "wait(0.5)", "done()"],
        all_of(file_is(name, text), file_is("original.txt", text)),
        {"original.txt": text},
        open="original.txt",
    )
    return task


def e_number_lines(rng: random.Random) -> Task:
    lines = lines_of(rng, 3)
    after = "\n".join(f"{index}. {line}" for index, line in enumerate(lines, 1))
    return retype(
        "steps.txt",
        "\n".join(lines),
        after,
        "number_lines",
        "number the lines of ~/steps.txt as '1. ', '2. ', '3. ' at their starts.",
    )


# ---- file manager templates ---------------------------------------------------------------


def select(name: str) -> list[str]:
    """The oracle's way to select an entry in the file manager: type-ahead, then Escape."""
    return ["click(600, 500)", type_action(name), 'key("Escape")']


def f_new_folder(rng: random.Random) -> Task:
    name, other = words(rng, 2)
    return Task(
        "new_folder",
        "files",
        f"In the file manager, create a new folder named {name} in your home folder.",
        ["click(600, 500)", 'key("ctrl+shift+n")', 'key("ctrl+a")', type_action(name + "\n"), "done()"],
        exists(name, directory=True),
        {f"{other}.txt": sentence(rng) + "\n"},
    )


def f_rename(rng: random.Random) -> Task:
    old, new, other = words(rng, 3)
    content = sentence(rng) + "\n"
    return Task(
        "rename_file",
        "files",
        f"In the file manager, rename {old}.txt to {new}.txt.",
        [*select(old), 'key("F2")', 'key("ctrl+a")', type_action(f"{new}.txt\n"), "done()"],
        all_of(file_is(f"{new}.txt", content), absent(f"{old}.txt")),
        {f"{old}.txt": content, f"{other}.txt": sentence(rng) + "\n"},
    )


def f_rename_folder(rng: random.Random) -> Task:
    old, new = words(rng, 2)
    return Task(
        "rename_folder",
        "files",
        f"In the file manager, rename the folder {old} to {new}.",
        [*select(old), 'key("F2")', 'key("ctrl+a")', type_action(f"{new}\n"), "done()"],
        all_of(exists(f"{new}/inside.txt"), absent(old)),
        {f"{old}/inside.txt": sentence(rng) + "\n"},
    )


def f_trash(rng: random.Random) -> Task:
    doomed, kept = words(rng, 2)
    return Task(
        "trash_file",
        "files",
        f"In the file manager, move {doomed}.txt to the trash; keep {kept}.txt.",
        [*select(doomed), 'key("Delete")', "wait(0.5)", "done()"],
        all_of(absent(f"{doomed}.txt"), exists(f"{kept}.txt")),
        {f"{doomed}.txt": sentence(rng) + "\n", f"{kept}.txt": sentence(rng) + "\n"},
    )


def f_move(rng: random.Random) -> Task:
    name, folder = words(rng, 2)
    content = sentence(rng) + "\n"
    return Task(
        "move_into_folder",
        "files",
        f"In the file manager, move {name}.txt into the folder {folder}.",
        [
            *select(name),
            'key("ctrl+x")',
            type_action(folder),
            'key("Escape")',
            'key("Return")',
            'key("ctrl+v")',
            "wait(0.5)",
            "done()",
        ],
        all_of(file_is(f"{folder}/{name}.txt", content), absent(f"{name}.txt")),
        {f"{name}.txt": content, f"{folder}/": ""},
    )


def f_copy(rng: random.Random) -> Task:
    name, folder = words(rng, 2)
    content = sentence(rng) + "\n"
    return Task(
        "copy_into_folder",
        "files",
        f"In the file manager, copy {name}.txt into the folder {folder}.",
        [
            *select(name),
            'key("ctrl+c")',
            type_action(folder),
            'key("Escape")',
            'key("Return")',
            'key("ctrl+v")',
            "wait(0.5)",
            "done()",
        ],
        all_of(file_is(f"{folder}/{name}.txt", content), file_is(f"{name}.txt", content)),
        {f"{name}.txt": content, f"{folder}/": ""},
    )


# ---- spreadsheet templates ----------------------------------------------------------------


def table(rng: random.Random, rows: int) -> tuple[list[list[str]], list[int], list[int]]:
    """A header and ``rows`` rows of (item, price, quantity)."""
    items = rng.sample(WORDS, rows)
    prices, quantities = numbers(rng, rows), [rng.randint(1, 9) for _ in range(rows)]
    sheet = [["item", "price", "qty"]] + [[i, str(p), str(q)] for i, p, q in zip(items, prices, quantities)]
    return sheet, prices, quantities


def spreadsheet(template: str, instruction: str, sheet, oracle: list[str], check) -> Task:
    return Task(
        template,
        "spreadsheet",
        f"In the spreadsheet ~/book.gnumeric, {instruction} Save the file.",
        [*oracle, 'key("ctrl+s")', "wait(0.5)", "done()"],
        check,
        sheet=sheet,
    )


def s_fill_cell(rng: random.Random) -> Task:
    sheet, _, _ = table(rng, 4)
    row, column, value = rng.randint(6, 12), rng.randint(0, 4), rng.randint(100, 999)
    cell = cell_name(row, column)
    return spreadsheet(
        "fill_cell",
        f"enter the number {value} in cell {cell}.",
        sheet,
        [goto(row, column), type_action(f"{value}\n")],
        sheet_has({cell: str(value)}),
    )


def s_fill_column(rng: random.Random) -> Task:
    sheet, _, _ = table(rng, 4)
    values = numbers(rng, 4)
    expected = {cell_name(row, 3): str(value) for row, value in enumerate(values, 1)}
    return spreadsheet(
        "fill_column",
        f"enter {', '.join(map(str, values))} in cells D2 to D5, in that order.",
        sheet,
        [goto(1, 3), type_action("".join(f"{v}\n" for v in values))],
        sheet_has(expected),
    )


def s_formula(template: str, function: str, compute: Callable[[list[int]], float]) -> Callable[[random.Random], Task]:
    def make(rng: random.Random) -> Task:
        rows = rng.randint(3, 7)
        sheet, prices, _ = table(rng, rows)
        cell = cell_name(rows + 2, 1)
        formula = f"={function}(B2:B{rows + 1})"
        return spreadsheet(
            template,
            f"put the {template.split('_')[0]} of the prices (B2:B{rows + 1}) in cell {cell} with a formula.",
            sheet,
            [goto(rows + 2, 1), type_action(formula + "\n")],
            sheet_has({cell: str(compute(prices))}, formulas=(cell,)),
        )

    return make


def s_row_products(rng: random.Random) -> Task:
    rows = rng.randint(2, 4)
    sheet, prices, quantities = table(rng, rows)
    expected = {cell_name(row, 3): str(p * q) for row, (p, q) in enumerate(zip(prices, quantities), 1)}
    typed = "".join(f"=B{row + 1}*C{row + 1}\n" for row in range(1, rows + 1))
    return spreadsheet(
        "row_products",
        f"fill D2:D{rows + 1} with formulas computing price times qty of each row.",
        sheet,
        [goto(1, 3), type_action(typed)],
        sheet_has(expected, formulas=tuple(expected)),
    )


def s_header(rng: random.Random) -> Task:
    sheet, _, _ = table(rng, 3)
    header = rng.choice(["total", "notes", "stock", "rating"])
    return spreadsheet(
        "add_header",
        f"enter the text {header!r} in cell D1.",
        sheet,
        [goto(0, 3), type_action(header + "\n")],
        sheet_has({"D1": header}),
    )


def s_difference(rng: random.Random) -> Task:
    sheet, prices, quantities = table(rng, 3)
    return spreadsheet(
        "difference",
        "put a formula in cell E2 that subtracts qty from price in row 2 (B2 - C2).",
        sheet,
        [goto(1, 4), type_action("=B2-C2\n")],
        sheet_has({"E2": str(prices[0] - quantities[0])}, formulas=("E2",)),
    )


TEMPLATES: tuple[Callable[[random.Random], Task], ...] = (
    t_make_folder,
    t_make_nested_folders,
    t_write_line,
    t_copy_file,
    t_move_into_folder,
    t_rename_file,
    t_delete_file,
    t_count_lines,
    t_sort_lines,
    t_grep_lines,
    t_uppercase,
    t_sum_numbers,
    t_make_executable,
    t_archive_folder,
    t_symlink,
    t_head_lines,
    t_unique_lines,
    t_touch_files,
    t_count_words,
    e_write_text,
    e_append_line,
    e_prepend_line,
    e_replace_word,
    e_delete_line,
    e_sort_lines,
    e_uppercase,
    e_fix_typo,
    e_save_as,
    e_number_lines,
    f_new_folder,
    f_rename,
    f_rename_folder,
    f_trash,
    f_move,
    f_copy,
    s_fill_cell,
    s_fill_column,
    s_formula("sum_formula", "SUM", sum),
    s_formula("average_formula", "AVERAGE", lambda values: sum(values) / len(values)),
    s_formula("max_formula", "MAX", max),
    s_formula("min_formula", "MIN", min),
    s_row_products,
    s_header,
    s_difference,
)


def templates_for(apps: tuple[str, ...]) -> list[Callable[[random.Random], Task]]:
    """The templates whose tasks use one of ``apps``."""
    return [template for template in TEMPLATES if template(random.Random(0)).app in apps]
