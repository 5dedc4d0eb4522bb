"""The SWE family: real repositories' venvs in the sandbox, validated tasks, the judge, and SWE-bench-format instances.

The venvs are the expensive part (pip installs, ~20 s each): this file builds those of
:data:`COVERED` once (cached in the family's cache, under a file lock) and plays tasks of those
repositories. The other repositories' tasks are validated when they are built
(``python -m agentgym.environments.swe.synthesis``) and replayed by ``benchmarks/swe.py`` (oracle and
unpatched verdicts per repository, recorded in benchmarks/results/swe.json).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import random
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentgym
from agentgym.environments import swe
from agentgym.environments.swe import repositories as repository_module
from agentgym.environments.swe.bench import SWEBenchDataMissing, SWEBenchEnv
from agentgym.environments.swe.checkout import Checkout
from agentgym.environments.swe.env import SWEEnv, steady_output
from agentgym.environments.swe.mutations import KINDS, candidates
from agentgym.environments.swe.repositories import download_sdist, prepare_repository, repositories
from agentgym.environments.swe.tasks import all_tasks, counts, ordered

#: The repositories whose tasks this file plays (small, fast suites).
COVERED = ("iniconfig", "parse")


@pytest.fixture(scope="session")
def covered() -> dict[str, object]:
    return {name: prepare_repository(repositories()[name]) for name in COVERED}


@pytest.fixture(scope="module")
def env(covered: dict[str, object]):  # noqa: ANN201
    environment = SWEEnv(variant="edit")
    yield environment
    environment.close()


def sample_task_ids(variant: str, per_repository: int) -> list[int]:
    rng = random.Random(0)
    chosen = []
    for name in COVERED:
        ids = [index for index, task in enumerate(ordered(variant)) if task.repository == name]
        chosen += rng.sample(ids, min(per_repository, len(ids)))
    return chosen


def play_oracle(environment: SWEEnv, task_id: int) -> dict:
    environment.reset(options={"task_id": task_id})
    for _ in range(5):
        _, reward, terminated, _, info = environment.step(environment.oracle_action())
        if terminated:
            return {**info, "reward": reward}
    raise AssertionError("the oracle did not submit")


def test_repository_list_is_data_and_big_enough() -> None:
    listed = repositories()
    assert len(listed) >= 20
    assert all(repository.license and repository.version and repository.tests for repository in listed.values())
    assert {repository.split for repository in listed.values()} == {"train", "test"}
    assert {task.repository for task in all_tasks()} <= set(listed)


def test_tasks_are_unique_and_spread_over_the_repositories() -> None:
    tasks = all_tasks()
    assert len({task.key for task in tasks}) == len(tasks)
    per_repository = Counter(task.repository for task in tasks)
    assert max(per_repository.values()) <= 0.16 * len(tasks), per_repository.most_common(3)


def test_repository_variables_reach_the_tests(covered: dict[str, object]) -> None:
    assert dict(repositories()["wcwidth"].env) == {"WCWIDTH_PYTHON": "1"}  # its suite checks the mode it runs in
    with Checkout(
        {"probe.py": b"import os\nprint(os.environ.get('WCWIDTH_PYTHON'))\n"},
        covered["iniconfig"].venv,
        "/work",
        env={"WCWIDTH_PYTHON": "1"},
    ) as checkout:
        assert checkout.run("python probe.py").stdout.strip() == "1"


def test_registered_splits_match_the_task_files() -> None:
    assert swe.EDIT_SPLITS.counts() == counts("edit")
    assert swe.REWRITE_SPLITS.counts() == counts("rewrite")
    assert agentgym.env_info("SWE-v0").splits.counts() == counts("edit")
    test_repositories = {name for name, repository in repositories().items() if repository.split == "test"}
    for split, ids in (("train", range(counts("edit")["train"])),):
        assert not {ordered("edit")[index].repository for index in ids} & test_repositories, split


def test_a_test_runs_output_reads_the_same_twice() -> None:
    # What differs between two runs of the same tests: durations, object addresses, Unix times (boltons'
    # tracing tests), tempfile's random names (pathspec's assertion messages).
    first, second = (
        f"E   KeyError: '/tmp/{name}'\nE   FileNotFoundError: '/tmp/{name}/A.txt'\n"
        f"<Tracer object at {address}> at {clock}\n1 failed, 9 passed in {seconds}s"
        for name, address, clock, seconds in (
            ("tmpaffgp_be", "0x7fca037f8880", "1795719808.4993658", "0.42"),
            ("tmp6f3w6t0b", "0x7f5c0463c650", "1795744766.6920094", "1.07"),
        )
    )
    assert steady_output(first) == steady_output(second)
    assert steady_output(first) == (
        "E   KeyError: '/tmp/tmp…'\nE   FileNotFoundError: '/tmp/tmp…/A.txt'\n"
        "<Tracer object at 0x…> at <time>\n1 failed, 9 passed"
    )
    steady = "tests/test_tmpdir_utils.py::test_tmp_path_factory PASSED  iso 10:59:59 tmpfile"
    assert steady_output(steady) == steady  # names and clocks of the tests themselves stay


def test_mutations_revert_exactly_and_cover_every_kind() -> None:
    source = Path(swe.__file__).with_name("mutations.py").read_text()  # any real module will do
    found = list(candidates("mutations.py", source))
    assert {mutation.kind for mutation in found} >= set(KINDS) - {"arithmetic"}
    assert sum(mutation.kind == "swap_arguments" for mutation in found) > 10  # any call, not only range()
    for mutation in random.Random(1).sample(found, 40):
        mutated = mutation.apply(source)
        assert mutated != source and mutation.revert(mutated) == source


def test_preparing_one_task_builds_its_repository_alone(covered: dict[str, object]) -> None:
    """A run prepares SWE per task (issue 49): one task's preparation builds (here: finds) its repository's venv
    and no other repository's."""
    task_id = sample_task_ids("edit", 1)[0]
    lines: list[str] = []
    assert agentgym.prepare_env("SWE-v0", report=lines.append, task_ids=[task_id])
    ready = [line.split(":")[0] for line in lines if ": ready (" in line]
    assert ready == [ordered("edit")[task_id].repository], lines


@contextlib.contextmanager
def simple_index(files: dict[str, bytes], sha256: dict[str, str]) -> Iterator[str]:
    """A package index on loopback answering PEP 691's JSON for one project (``/inflection/``) and serving ``files``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path == "/simple/inflection/":
                listing = [
                    {"filename": name, "url": f"../../files/{name}", "hashes": {"sha256": sha256[name]}}
                    for name in files
                ]
                body, kind = (
                    json.dumps({"meta": {"api-version": "1.0"}, "files": listing}).encode(),
                    "application/vnd.pypi.simple.v1+json",
                )
            elif self.path.startswith("/files/") and self.path[len("/files/") :] in files:
                body, kind = files[self.path[len("/files/") :]], "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()


def test_an_sdist_comes_from_the_index_checked_against_its_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pinned sdist is fetched from the index's JSON listing (no pip, which would build its metadata); a file
    whose bytes do not match the listed sha256 is not kept, and pip is asked instead."""
    repository = repositories()["inflection"]
    name, archive = f"inflection-{repository.version}.tar.gz", b"the sdist's bytes"
    other = {
        "inflection-0.0.1.tar.gz": b"another version",
        f"inflection-{repository.version}-py3-none-any.whl": b"a wheel",
    }
    files = {**other, name: archive}
    pip_calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(repository_module, "_pip", lambda *arguments: pip_calls.append(arguments))
    with simple_index(files, {file: hashlib.sha256(data).hexdigest() for file, data in files.items()}) as index:
        monkeypatch.setenv("PIP_INDEX_URL", index)
        downloaded = download_sdist(repository, tmp_path / "good")
        assert downloaded == tmp_path / "good" / name and downloaded.read_bytes() == archive and pip_calls == []
        assert download_sdist(repository, tmp_path / "good") == downloaded  # found, not fetched again
    with simple_index(files, {file: "0" * 64 for file in files}) as index, pytest.raises(StopIteration):
        monkeypatch.setenv("PIP_INDEX_URL", index)
        download_sdist(repository, tmp_path / "tampered")  # the recorded pip call downloads nothing
    assert pip_calls == [
        ("download", "--no-deps", "--no-binary", "inflection", "-d", str(tmp_path / "tampered"), repository.requirement)
    ]
    assert list((tmp_path / "tampered").iterdir()) == []


@pytest.mark.parametrize("task_id", sample_task_ids("edit", 2))
def test_unpatched_fails_and_oracle_passes(env: SWEEnv, task_id: int) -> None:
    env.reset(options={"task_id": task_id})
    _, reward, terminated, _, unpatched = env.step("submit")
    assert terminated and reward == 0.0 and unpatched["fail_to_pass"] < 1.0 and not unpatched["success"]
    solved = play_oracle(env, task_id)
    assert solved["reward"] == 1.0 and solved["fail_to_pass"] == 1.0 and solved["pass_to_pass"] == 1.0


def test_same_task_same_verdict_twice(env: SWEEnv) -> None:
    task_id = sample_task_ids("edit", 1)[0]
    verdicts = []
    for _ in range(2):
        env.reset(options={"task_id": task_id})
        _, reward, _, _, info = env.step("submit")
        verdicts.append((reward, info["fail_to_pass"], info["pass_to_pass"]))
    assert verdicts[0] == verdicts[1]


def test_wrong_edit_and_edited_tests_score_zero(env: SWEEnv) -> None:
    task_id = sample_task_ids("edit", 1)[0]
    env.reset(options={"task_id": task_id})
    task = env.task
    env.step(f"Action: write {task.path}\n```\nraise ImportError('broken on purpose')\n```")
    _, reward, _, _, info = env.step("submit")
    assert reward == 0.0 and info["pass_to_pass"] < 1.0
    env.reset(options={"task_id": task_id})
    for path in task.test_files:  # tests rewritten to pass trivially are put back before judging
        env.step(f"Action: write {path}\n```\ndef test_nothing():\n    pass\n```")
    _, reward, _, _, info = env.step("submit")
    assert reward == 0.0 and info["fail_to_pass"] < 1.0


def test_judging_compiles_the_tests_afresh(env: SWEEnv) -> None:
    """Bytecode the agent's runs left (or planted) is removed before judging: a test file edited and put back
    within the same second would otherwise run from its cached edit."""
    env.reset(options={"task_id": sample_task_ids("edit", 1)[0]})
    folder = str(Path(env.task.test_files[0]).parent / "__pycache__")
    env.step(f"Action: shell mkdir -p {folder} && echo planted > {folder}/planted.pyc")
    env.step("submit")
    assert env.checkout is not None
    assert "planted" not in env.checkout.run(f"ls {folder} 2>/dev/null; true").stdout


def test_tools_native_calls_and_no_network(env: SWEEnv) -> None:
    env.reset(options={"task_id": sample_task_ids("edit", 1)[0]})
    observation, *_ = env.step({"name": "view", "arguments": json.dumps({"file": env.task.path, "start": 1, "end": 3})})
    assert "    1 | " in observation
    probe = "import socket; socket.create_connection(('151.101.0.223', 443), timeout=5)"  # a PyPI address
    observation, *_ = env.step({"name": "shell", "arguments": json.dumps({"command": f'python -c "{probe}"'})})
    assert "Network is unreachable" in observation and "[exit code 1]" in observation
    observation, _, _, _, info = env.step("frobnicate now")
    assert info["invalid_action"] and "unknown tool" in observation


def _instance_from_task(task_id: int, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A SWE-bench-format instance made from one of our tasks: a git repository whose base commit holds the
    bug, a test patch that adds a test file, the gold patch that undoes the bug."""
    task = ordered("edit")[task_id]
    prepared = prepare_repository(repositories()[task.repository])
    clone = tmp_path / "repos" / f"agentgym__{task.repository}"
    clone.mkdir(parents=True)
    for path, data in prepared.files().items():
        (clone / path).parent.mkdir(parents=True, exist_ok=True)
        (clone / path).write_bytes(data)
    original = (clone / task.path).read_text()
    lines = original.splitlines(keepends=True)
    (clone / task.path).write_text("".join(lines[: task.first - 1]) + task.after + "".join(lines[task.last :]))

    def git(*arguments: str) -> str:
        return subprocess.run(["git", "-C", str(clone), *arguments], check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "base")
    base = git("rev-parse", "HEAD").strip()
    (clone / task.path).write_text(original)
    gold = git("diff")
    git("checkout", "-q", "--", task.path)
    new_test = (
        task.test_files[0].rsplit("/", 1)[0] + "/test_added_by_patch.py"
        if "/" in task.test_files[0]
        else "test_added_by_patch.py"
    )
    (clone / new_test).write_text("def test_added():\n    assert True\n")
    git("add", "-N", new_test)
    test_patch = git("diff")
    (clone / new_test).unlink()
    git("reset", "-q")
    instance = {
        "instance_id": f"agentgym__{task.repository}-{task_id}",
        "repo": f"agentgym/{task.repository}",
        "base_commit": base,
        "problem_statement": task.problem_statement,
        "test_patch": test_patch,
        "patch": gold,
        "FAIL_TO_PASS": json.dumps(list(task.fail_to_pass)),
        "PASS_TO_PASS": json.dumps([f"{new_test}::test_added", *task.pass_to_pass()[:20]]),
    }
    instances = tmp_path / "instances.jsonl"
    instances.write_text(json.dumps(instance) + "\n")
    venvs = tmp_path / "venvs"
    venvs.mkdir()
    (venvs / f"agentgym__{task.repository}").symlink_to(prepared.venv)
    return instances, tmp_path / "repos", venvs


def test_user_supplied_swe_bench_instance_runs_and_is_scored(covered: dict[str, object], tmp_path: Path) -> None:
    with pytest.raises(SWEBenchDataMissing, match="instances="):
        SWEBenchEnv()
    instances, repos, venvs = _instance_from_task(sample_task_ids("edit", 1)[0], tmp_path)
    environment = SWEBenchEnv(instances=instances, repositories=repos, venvs=venvs)
    try:
        assert environment.splits.counts() == {"train": 0, "dev": 0, "test": 1}
        observation, info = environment.reset(options={"task_id": 0})
        assert "An issue was reported" in observation
        _, reward, _, _, info = environment.step("submit")
        assert reward == 0.0 and info["fail_to_pass"] < 1.0
        environment.reset(options={"task_id": 0})
        for _ in range(5):
            _, reward, terminated, _, info = environment.step(environment.oracle_action())
            if terminated:
                break
        assert reward == 1.0 and info["fail_to_pass"] == 1.0 and info["pass_to_pass"] == 1.0
    finally:
        environment.close()
