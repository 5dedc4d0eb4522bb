"""The documentation: every example of every page runs, every command shown exists, the site builds.

Pages are README.md and every ``docs/**/*.md``. A ```python block of a docs page

- runs as written here (in a fresh namespace, in a temporary working folder), or
- starts with the line ``# not run by the tests: <reason>`` (it needs what a test cannot have:
  a live site of the user's, a GPU, a model from a hub), reported as skipped with that reason, or
- follows the HTML comment ``<!-- run by tests/<file>.py -->``: that test runs it with fixtures of its
  own (a server, a side venv); checked here to exist and to name the page.

(README.md's Python examples run in tests/test_readme.py.) Shell blocks are not run (they install
packages, start servers, train): every command in them is checked instead. An ``agentgym`` command
line must parse with the real command's parser (argparse subcommands) or answer ``--help`` (the
commands that hand their arguments on); a script, config or module of this repository must exist;
a ``pip install -e '.[extras]'`` must name extras pyproject.toml declares; any other program must be
one of ``THIRD_PARTY_PROGRAMS``, which the page's reader installs.
YAML, JSON and TOML blocks must parse (a suite as a suite); ``text`` and bare blocks are outputs
and folder layouts, not code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from agentgym import cli
from agentgym.evaluation.suites import parse_suite

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before Python 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: The site's own machinery (mkdocs hooks), not pages.
NOT_PAGES = ("_tools",)

#: Programs the pages tell the reader to run that are not this repository's, with what provides them.
THIRD_PARTY_PROGRAMS = {
    "docker": "Docker (containers/setup-host.sh installs docker.io)",
    "ray": "Ray's command line (the ray extra)",
    "alfworld-download": "the alfworld package, on a machine with internet",
    "vf-eval": "verifiers' command line (the verifiers extra)",
    "st": "schemathesis' command line (the test extra)",
    "openapi-python-client": "a client generator from PyPI",
    "vllm": "vLLM, on a GPU machine (the vllm extra)",
    "mkdocs": "MkDocs (the docs extra)",
    "export": "the shell's builtin",
}
PYTHONS = {"python", "python3"}
#: Modules the pages run with ``python -m`` that live in other packages (or in side venvs).
THIRD_PARTY_MODULES = {"venv", "pytest", "spacy", "verl", "llama_cpp"}


def pages() -> list[Path]:
    """README.md and every page under docs/, in a stable order."""
    found = sorted(path for path in DOCS.rglob("*.md") if not set(path.relative_to(DOCS).parts) & set(NOT_PAGES))
    return [README, *found]


def page_name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    language: str
    code: str
    line: int  # 1-based line of the opening fence
    run_by: str | None  # a test file named by a preceding ``<!-- run by tests/x.py -->``

    @property
    def id(self) -> str:
        return f"{page_name(self.page)}:{self.line}"


FENCE = re.compile(
    r"^(?P<indent> *)```(?P<language>[\w+-]*)[^\n]*\n(?P<code>.*?)^(?P=indent)```", re.DOTALL | re.MULTILINE
)
RUN_BY = re.compile(r"<!--\s*run by (tests/[\w/]+\.py)\s*-->\s*$")


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        run_by = RUN_BY.search(before)
        indent = len(match.group("indent"))
        code = "\n".join(line[indent:] for line in match.group("code").splitlines()) + "\n"
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, match.group("language"), code, line, run_by.group(1) if run_by else None))
    return found


ALL_BLOCKS = [block for page in pages() for block in blocks(page)]
DOCS_PYTHON = [block for block in ALL_BLOCKS if block.language == "python" and block.page != README]
SHELL = [block for block in ALL_BLOCKS if block.language in ("bash", "sh", "shell")]


# ---- Python examples ----------------------------------------------------------------------------------


def test_the_pages_have_examples() -> None:
    assert len(pages()) > 20 and len(DOCS_PYTHON) > 20 and len(SHELL) > 20


@pytest.mark.usefixtures("alfworld_data")  # the ALFWorld example reads $ALFWORLD_DATA, as a user's would
@pytest.mark.parametrize("block", DOCS_PYTHON, ids=[block.id for block in DOCS_PYTHON])
def test_python_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reason = re.match(r"# not run by the tests: (.+)", block.code)
    if reason:
        pytest.skip(reason.group(1))
    if block.run_by:
        test_file = ROOT / block.run_by
        assert test_file.is_file(), f"{block.id} says it is run by {block.run_by}, which does not exist"
        assert block.page.name in test_file.read_text(), f"{block.run_by} does not name {block.page.name}"
        return
    monkeypatch.chdir(tmp_path)  # what an example writes (a parquet file, a results folder) lands here
    exec(compile(block.code, block.id, "exec"), {"__name__": "docs_example"})


DATA = [block for block in ALL_BLOCKS if block.language in ("yaml", "json", "toml")]
PARSERS = {"yaml": yaml.safe_load, "json": json.loads, "toml": tomllib.loads}


@pytest.mark.parametrize("block", DATA, ids=[block.id for block in DATA])
def test_data_example_parses(block: Block) -> None:
    """YAML, JSON and TOML examples parse; a suite parses as a suite."""
    data = PARSERS[block.language](block.code)
    if isinstance(data, dict) and "envs" in data and "description" in data:
        suite = parse_suite("example", data)
        assert suite.items, f"{block.id}: a suite without envs"


# ---- Shell commands -------------------------------------------------------------------------------------


def strip_comments(code: str) -> str:
    """The shell code without its comments (a ``#`` that starts a word, outside quotes)."""
    kept, quote, comment = [], "", False
    for index, char in enumerate(code):
        if comment:
            comment = char != "\n"
            if comment:
                continue
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or code[index - 1] in " \t\n"):
            comment = True
            continue
        kept.append(char)
    return "".join(kept)


SEPARATORS = set(";&|\n")


def commands(code: str) -> Iterator[list[str]]:
    """The simple commands of a shell block: words, without redirections and leading assignments.

    What a command substitution (``$(...)``) runs is a command too.
    """
    code = strip_comments(code).replace("\\\n", " ")
    for inner in re.findall(r"\$\(([^()]*)\)", code):
        yield from commands(inner)
    code = re.sub(r"\$\([^()]*\)", "SUBSTITUTED", code)
    lexer = shlex.shlex(code, posix=True, punctuation_chars=";&|<>\n")
    lexer.whitespace = " \t"
    lexer.commenters = ""
    lexer.wordchars += "$:=/.,*@~[]{}+%-"
    words: list[str] = []
    skip_next = False
    for token in [*lexer, "\n"]:
        if skip_next:
            skip_next = False
        elif "<" in token or ">" in token:  # a redirection: drop its file (and a file descriptor before it)
            if words and words[-1].isdigit():
                words.pop()
            skip_next = True
        elif set(token) <= SEPARATORS:
            while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
                words = words[1:]
            if words:
                yield words
            words = []
        else:
            words.append(token)


def check_agentgym(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """The command line parses with the real parser; delegated commands answer ``--help``."""
    parser = cli.build_parser()
    subcommands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert args and args[0] in subcommands, f"agentgym has no command {args[:1]}"
    delegated = not subcommands[args[0]].add_help  # train, fingerprint, mcp, the families' commands
    if delegated:
        leading = [word for word in args[1:] if not word.startswith("-")][:1]
        with pytest.raises(SystemExit) as exit_info:
            cli.main([args[0], *leading, "--help"])
        assert exit_info.value.code in (0, None), f"agentgym {' '.join(args)}: {capsys.readouterr().err.strip()}"
    else:
        try:
            parser.parse_args(args)
        except SystemExit as error:
            raise AssertionError(f"agentgym {' '.join(args)}: {capsys.readouterr().err.strip()}") from error
    capsys.readouterr()


REPOSITORY_FILE = re.compile(
    r"^(?:\./)?(?:agentgym|benchmarks|containers|environments|tests|docs)/[\w./-]+\.(?:py|sh|yaml|yml|json|toml|txt)$"
)


def check_repository_path(word: str) -> None:
    if REPOSITORY_FILE.match(word):
        assert (ROOT / word).exists(), f"{word} is not in the repository"


def check_command(words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    program = words[0]
    name = os.path.basename(program)
    args = words[1:]
    if name == "agentgym":
        check_agentgym(args, capsys)
    elif name in PYTHONS:
        if args[:1] == ["-m"]:
            module = args[1]
            top = module.split(".")[0]
            if top == "agentgym":
                assert importlib.util.find_spec(module) is not None, f"no module {module}"
            else:
                assert top in THIRD_PARTY_MODULES, f"python -m {module}: not a module of ours or a known one"
        elif args[:1] != ["-c"]:
            script = next(word for word in args if not word.startswith("-"))
            assert (ROOT / script).is_file(), f"{script} is not in the repository"
    elif name == "bash":
        assert (ROOT / args[0]).is_file(), f"{args[0]} is not in the repository"
    elif name == "pip" or (name == "uv" and args[:1] == ["pip"]):
        args = args[1:] if name == "uv" else args
        assert args[0] == "install", f"pip {args[0]}"
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
        for word in args[1:]:
            named = re.fullmatch(r"(?:\.|agentgym)\[([\w,-]+)\]", word)
            for extra in named.group(1).split(",") if named else ():
                assert extra in extras, f"pip install {word}: pyproject.toml has no extra {extra!r}"
    else:
        assert name in THIRD_PARTY_PROGRAMS, f"{program}: not a command of this project or a known program"
    for word in args:
        check_repository_path(word)


@pytest.mark.parametrize("block", SHELL, ids=[block.id for block in SHELL])
def test_shell_commands_exist(block: Block, capsys: pytest.CaptureFixture[str]) -> None:
    found = list(commands(block.code))
    assert found, f"{block.id}: no command"
    for words in found:
        check_command(words, capsys)


def test_the_command_checker_catches_mistakes(capsys: pytest.CaptureFixture[str]) -> None:
    """A flag, command, script or extra that does not exist fails the check."""
    mistakes = [
        "agentgym eval --suite quick --polcy oracle",
        "agentgym evaluate --suite quick",
        "agentgym webapps upp",
        "python benchmarks/no_such_benchmark.py",
        "bash containers/no-such-script.sh",
        ".venv/bin/pip install -e '.[no-such-extra]'",
        ".venv/bin/uv pip install -c tests/no-such-constraints.txt -e '.[all]'",
        ".venv/bin/uv sync",
        "agentgym train agentgym/train/configs/no-such-config.yaml",
        "wget http://example.com",
    ]
    for line in mistakes:
        (words,) = commands(line)
        with pytest.raises((AssertionError, SystemExit)):
            check_command(words, capsys)
    assert list(commands("A=1 agentgym list > out.txt 2>&1 && echo $(python -m agentgym.serving.backends.ray)")) == [
        ["python", "-m", "agentgym.serving.backends.ray"],
        ["agentgym", "list"],
        ["echo", "SUBSTITUTED"],
    ]


# ---- The README's commands and CI ---------------------------------------------------------------------


def test_ci_runs_the_readmes_test_command() -> None:
    """``.ci/run`` runs exactly the README's second command (the test suite's)."""
    section = README.read_text().split("## The two commands", 1)[1].split("\n## ", 1)[0]
    shell = [block.code.strip() for block in blocks(README) if block.language == "bash"]
    readme_commands = [code for code in shell if code in section]
    assert len(readme_commands) == 2, "the README's 'The two commands' section holds two bash blocks"
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    ci = [line for line in script if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [readme_commands[1]]


def test_every_requirement_the_test_command_installs_is_pinned() -> None:
    """``tests/constraints.txt`` pins every requirement of the extras the README's test command installs (but torch,
    installed before them), so that uv installs the versions pip resolved; a new one needs the file rewritten."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras, wanted, names = project["optional-dependencies"], ["all", "test"], set()
    requirements = [Requirement(text) for text in project["dependencies"]]
    while wanted:
        for requirement in map(Requirement, extras[wanted.pop()]):
            if requirement.name == "agentgym":
                wanted.extend(requirement.extras)
            else:
                requirements.append(requirement)
    for requirement in requirements:
        if requirement.marker is None or requirement.marker.evaluate():
            names.add(canonicalize_name(requirement.name))
    lines = (ROOT / "tests" / "constraints.txt").read_text().splitlines()
    pinned = {canonicalize_name(line.split("==")[0]) for line in lines if "==" in line and not line.startswith("#")}
    assert names - pinned == {"torch"}, "run tests/update_constraints.sh"


def test_the_readmes_links_resolve() -> None:
    """Every relative link of the README (not part of the site, so mkdocs does not check it) exists."""
    targets = re.findall(r"\]\((?!https?://|#|mailto:)([^)#\s]+)", README.read_text())
    assert targets, "the README links its pages"
    assert [target for target in targets if not (ROOT / target).exists()] == []


# ---- The site -----------------------------------------------------------------------------------------


def nav_pages(nav: object) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def test_every_page_is_in_the_sites_navigation() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = set(nav_pages(config["nav"]))
    on_disk = {str(page.relative_to(DOCS)) for page in pages() if page != README}
    assert on_disk - listed == set(), "pages missing from mkdocs.yml's nav"
    assert listed - on_disk == set(), "nav entries without a page"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """``mkdocs build --strict``: no broken link or anchor, every API reference resolves."""
    site = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-6000:]
    core = (site / "api" / "core" / "index.html").read_text()
    assert "agentgym.contract.core.TextEnv" in core and "oracle_action" in core  # rendered from the docstrings
    sokoban = (site / "envs" / "sokoban" / "index.html").read_text()
    assert "RAGEN" in sokoban  # the family's module docstring
    assert (site / "benchmarks" / "results" / "gpu_paths" / "index.html").is_file()
