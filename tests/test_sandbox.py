"""agentgym.sandbox: the API, and one security test per escape attempt (the README's table).

Each security test says what the sandboxed code tried, checks that it failed inside the
sandbox, and checks the host afterwards (its files, its processes, its responsiveness). The
key ones run on both backends: bwrap always, docker where dockerd and the base image exist
(``containers/base/build.sh``); otherwise they are skipped with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentgym.sandbox import Limits, RunResult, Sandbox, SandboxError, SandboxUnavailable, available
from agentgym.sandbox import probes as sandbox_probes
from agentgym.sandbox.cgroup import memory_groups

PROJECT = Path(__file__).resolve().parents[1]
README = PROJECT / "README.md"
DOCKER_PROBLEM = available("docker")
BACKENDS = [
    "bwrap",
    pytest.param("docker", marks=pytest.mark.skipif(bool(DOCKER_PROBLEM), reason=f"docker: {DOCKER_PROBLEM}")),
]
#: Small limits so that every attack ends in seconds.
TEST_LIMITS = Limits(cpu_s=3, wall_s=10, memory_mb=256, processes=32, file_size_mb=8, output_bytes=100_000)


@pytest.fixture(params=BACKENDS)
def box(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    with Sandbox(limits=TEST_LIMITS, backend=request.param) as sandbox:
        yield sandbox


@pytest.fixture
def bwrap_box() -> Iterator[Sandbox]:
    with Sandbox(limits=TEST_LIMITS) as sandbox:
        yield sandbox


def python(box: Sandbox, code: str, **kwargs: object) -> RunResult:
    return box.run_python(code, **kwargs)  # type: ignore[arg-type]


def processes_with(text: str) -> list[int]:
    """Host pids whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def host_latency_s() -> float:
    """How long the host takes to start and finish a trivial process."""
    start = time.monotonic()
    subprocess.run(["true"], check=True)
    return time.monotonic() - start


# ---- the API ------------------------------------------------------------------------------------


def test_run_reports_exit_code_output_and_times(box: Sandbox) -> None:
    result = box.run("echo out; echo err >&2; exit 3")
    assert (result.exit_code, result.stdout, result.stderr, result.limit_hit) == (3, "out\n", "err\n", None)
    assert not result.ok and result.wall_s > 0 and result.cpu_s is not None and result.cpu_s >= 0
    assert box.run(["printf", "%s", "a b"]).stdout == "a b"
    assert box.run("cat", stdin="fed through stdin").stdout == "fed through stdin"
    assert box.run("cat").stdout == ""  # no stdin: end of file at once
    json.dumps(result.to_dict())


def test_read_file_stops_at_max_bytes(box: Sandbox) -> None:
    box.write_file("big.txt", "x" * 100)
    assert box.read_file("big.txt", max_bytes=100) == "x" * 100
    with pytest.raises(SandboxError, match="larger than 99 bytes"):
        box.read_file("big.txt", binary=True, max_bytes=99)


def test_large_stdin_and_output_in_both_directions(box: Sandbox) -> None:
    data = "x" * 90_000
    result = box.run("cat", stdin=data)
    assert result.ok and result.stdout == data


def test_files_persist_between_runs_and_processes_do_not(box: Sandbox) -> None:
    box.write_file("notes/a.txt", "hello\n")
    assert box.run("cat notes/a.txt && echo more >> notes/a.txt && pwd && echo $HOME").stdout == "hello\n/work\n/work\n"
    assert box.read_file("notes/a.txt") == "hello\nmore\n"
    assert box.read_file("/work/notes/a.txt", binary=True) == b"hello\nmore\n"
    box.write_file("run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
    assert box.run("./run.sh").stdout == "ran\n"
    marker = f"3{uuid.uuid4().int % 10**6}.25"
    box.run(f"sleep {marker} > /dev/null 2>&1 &")
    assert "sleep" not in box.run("ps -eo comm").stdout.split()
    assert processes_with(f"sleep {marker}") == []


def test_clear_empties_the_work_dir_without_following_links(box: Sandbox) -> None:
    outside = Path(tempfile.mkdtemp())
    (outside / "keep.txt").write_text("host file")
    try:
        box.run(f"mkdir -p a/b && echo x > a/b/c && chmod 000 a/b && ln -s {outside} link && ln -s /work/a inner")
        box.clear()
        assert os.listdir(box.workdir) == [] and (outside / "keep.txt").read_text() == "host file"
    finally:
        shutil.rmtree(outside)


def test_run_python_uses_the_system_python_and_leaves_the_work_dir_alone(box: Sandbox) -> None:
    result = box.run_python(
        "import sys, os\nprint(sys.argv[1:], os.listdir('.'))\nprint(input())", stdin="hi", args=["a"]
    )
    assert result.ok and result.stdout == "['a'] []\nhi\n"
    failing = box.run_python("def f():\n    1 / 0\nf()\n", filename="prog.py")
    assert failing.exit_code == 1 and 'File "/sandbox/prog.py", line 2, in f' in failing.stderr
    assert os.listdir(box.workdir) == []


def test_results_are_deterministic(bwrap_box: Sandbox) -> None:
    code = "print(hash('agentgym'), sorted({'b', 'a'}), list({'x', 'y', 'z'}))"
    assert python(bwrap_box, code).stdout == python(bwrap_box, code).stdout


def test_runs_as_an_unprivileged_user_without_capabilities(box: Sandbox) -> None:
    result = box.run("id -u; grep CapEff /proc/self/status")
    uid, capabilities = result.stdout.split("\n")[:2]
    assert uid != "0" and capabilities.split()[-1] == "0000000000000000"


def test_path_rejects_escapes(bwrap_box: Sandbox) -> None:
    for bad in ("../x", "/etc/passwd", "a/../../x", "/work/../etc/passwd"):
        with pytest.raises(SandboxError):
            bwrap_box.path(bad)
    assert bwrap_box.path("/work/a/./b/../c") == bwrap_box.workdir / "a" / "c"


def test_limits_validate_and_replace() -> None:
    with pytest.raises(ValueError, match="memory_mb"):
        Limits(memory_mb=0)
    assert Limits().replace(wall_s=3).wall_s == 3


def test_missing_bwrap_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_probes, "_checked", {})
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name: None if name == "bwrap" else real_which(name))
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap \(bwrap\) is not installed: apt-get install bubblewrap"):
        Sandbox()
    assert "apt-get install bubblewrap" in (available("bwrap") or "")


def test_missing_docker_image_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("docker") is None:
        with pytest.raises(SandboxUnavailable, match="docker is not installed"):
            Sandbox(backend="docker")
        return
    with pytest.raises(SandboxUnavailable, match=r"(not found: build it with containers/base/build.sh|dockerd)"):
        Sandbox(backend="docker", image="agentgym/no-such-image:never")


def test_unknown_backend_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        Sandbox(backend="chroot")  # type: ignore[arg-type]


def test_many_sandboxes_run_concurrently() -> None:
    def job(index: int) -> tuple[str, str]:
        with Sandbox(limits=TEST_LIMITS) as box:
            box.write_file("n.txt", str(index))
            result = box.run_python(
                "import os; print(open('n.txt').read(), sum(p.isdigit() for p in os.listdir('/proc')) < 10)"
            )
            return result.stdout, box.read_file("n.txt")

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(job, range(32)))
    assert results == [(f"{index} True\n", str(index)) for index in range(32)]


# ---- security: network --------------------------------------------------------------------------


def test_network_dns_lookup_fails(box: Sandbox) -> None:
    """Tried: resolve a public name (getaddrinfo). Outcome: fails at once, no resolver is reachable."""
    result = python(
        box,
        "import socket, time\nstart = time.monotonic()\ntry:\n    print(socket.getaddrinfo('example.com', 80))\n"
        "except OSError as error:\n    print('failed', type(error).__name__, round(time.monotonic() - start, 3))",
    )
    assert result.stdout.startswith("failed"), result.stdout
    assert float(result.stdout.split()[-1]) < 2.0, result.stdout


def test_network_tcp_to_a_host_port_on_loopback_fails(box: Sandbox) -> None:
    """Tried: TCP connect to 127.0.0.1:PORT where the host listens. Outcome: refused; the host saw nothing."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            accepted.append(listener.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    result = python(
        box,
        f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=3)\n    print('connected')\n"
        "except OSError as error:\n    print('failed', type(error).__name__)",
    )
    thread.join()
    listener.close()
    assert result.stdout.startswith("failed"), result.stdout
    assert accepted == []


def test_network_tcp_to_an_outside_address_fails_fast(box: Sandbox) -> None:
    """Tried: TCP connect to 1.1.1.1:443 and list network interfaces. Outcome: unreachable at once; only lo."""
    result = python(
        box,
        "import socket, time\nstart = time.monotonic()\n"
        "try:\n    socket.create_connection(('1.1.1.1', 443), timeout=5)\n    print('connected')\n"
        "except OSError as error:\n    print('failed', type(error).__name__, round(time.monotonic() - start, 3))\n"
        "print([name for _, name in socket.if_nameindex()])",
    )
    first, interfaces = result.stdout.splitlines()
    assert first.startswith("failed") and float(first.split()[-1]) < 1.0, result.stdout
    assert interfaces == "['lo']"


def test_docker_socket_is_not_reachable(box: Sandbox) -> None:
    """Tried: reach the host's docker daemon through /var/run/docker.sock. Outcome: no such file."""
    result = box.run("ls -l /var/run/docker.sock /run/docker.sock")
    assert result.exit_code != 0 and "docker.sock" not in result.stdout


# ---- security: files ----------------------------------------------------------------------------


def test_reading_the_host_home_fails(box: Sandbox) -> None:
    """Tried: list the host's home (~, /root, /home) and read a file the test put there. Outcome: not visible."""
    home = Path(os.path.expanduser("~"))
    secret = home / f"agentgym-secret-{uuid.uuid4().hex}"
    secret.write_text("the host's secret")
    try:
        result = box.run(f"ls -la {home} /root /home; cat {secret}")
    finally:
        secret.unlink()
    assert result.exit_code != 0
    assert secret.name not in result.stdout and "the host's secret" not in result.stdout


def test_reading_etc_shadow_fails(box: Sandbox) -> None:
    """Tried: cat /etc/shadow (and /etc/gshadow). Outcome: absent inside; the host's file is untouched."""
    result = box.run("cat /etc/shadow /etc/gshadow")
    assert result.exit_code != 0 and result.stdout == ""
    if os.path.exists("/etc/shadow") and os.access("/etc/shadow", os.R_OK):
        shadow = Path("/etc/shadow").read_text()
        assert shadow.splitlines()[0] not in result.stdout + result.stderr


def test_reading_the_project_files_fails(box: Sandbox) -> None:
    """Tried: read the project's README.md and this test file by their host paths. Outcome: not there."""
    this_file = Path(__file__).resolve()
    result = box.run(f"cat {README} {this_file}; ls {PROJECT}")
    assert result.exit_code != 0 and result.stdout == ""
    assert "No such file or directory" in result.stderr
    assert "def test_reading_the_project_files_fails" not in result.stdout


def test_writing_outside_the_work_dir_fails(box: Sandbox) -> None:
    """Tried: write into the host's /tmp, the project dir, /usr, / and /etc. Outcome: nothing lands on the host."""
    name = f"agentgym-escape-{uuid.uuid4().hex}"
    host_tmp, host_project = Path("/tmp") / name, PROJECT / name
    result = box.run(
        f"echo x > /tmp/{name} && echo tmp-ok; echo x > {host_project} || echo project-failed; "
        f"echo x > /usr/{name} || echo usr-failed; echo x > /{name} || echo root-failed; "
        f"echo x > /etc/{name} || echo etc-failed; ls /tmp"
    )
    assert "project-failed" in result.stdout and "usr-failed" in result.stdout
    assert "root-failed" in result.stdout and "etc-failed" in result.stdout
    assert not host_tmp.exists() and not host_project.exists()  # /tmp inside is private
    assert not Path("/usr", name).exists() and not Path("/", name).exists() and not Path("/etc", name).exists()


def test_symlink_to_etc_shadow_cannot_be_followed(box: Sandbox) -> None:
    """Tried: ln -s /etc/shadow in the work dir, read it inside and have the host read it. Outcome: both refused."""
    result = box.run("ln -s /etc/shadow shadow && cat shadow")
    assert result.exit_code != 0 and result.stdout == ""
    assert os.path.islink(box.workdir / "shadow")
    with pytest.raises(SandboxError, match="outside the work dir"):
        box.read_file("shadow")
    with pytest.raises(SandboxError, match="outside the work dir"):
        box.write_file("shadow", "overwritten")


def test_symlink_to_the_project_cannot_be_read_or_written_through(box: Sandbox) -> None:
    """Tried: symlinks to the project dir (absolute, and ../ climbing out), then read/write through them."""
    readme = README.read_text()
    result = box.run(f"ln -s {PROJECT} project && ln -s ../../../../../../.. up && cat project/README.md up{README}")
    assert result.exit_code != 0 and readme[:200] not in result.stdout
    for path in ("project/README.md", f"up{README}"):
        # The host follows the links as the sandbox does: ../ cannot climb out of the work dir, and an
        # absolute target is a path inside the sandbox (/work/... is the work dir), never the host's.
        with pytest.raises((SandboxError, FileNotFoundError)):
            box.read_file(path)
        try:
            written = box.write_file(path, "pwned")
        except (SandboxError, FileNotFoundError):
            continue
        assert written.is_relative_to(box.workdir)
    assert README.read_text() == readme
    # Links that stay inside are followed as the sandbox sees them.
    box.run("mkdir -p real && echo inside > real/f && ln -s /work/real absolute && ln -s real relative")
    assert box.read_file("absolute/f") == box.read_file("relative/f") == "inside\n"


def test_fifos_and_sockets_in_the_work_dir_do_not_block_the_host(box: Sandbox) -> None:
    """Tried: replace files the host reads or writes with a FIFO (would block the host) and a directory."""
    box.run("mkfifo answer.txt result.txt && mkdir out.txt")
    for path in ("answer.txt", "out.txt"):
        with pytest.raises(SandboxError, match="not a regular file"):
            box.read_file(path)
    with pytest.raises(SandboxError, match="not a regular file"):
        box.write_file("result.txt", "x")


# ---- security: resources ------------------------------------------------------------------------


def test_fork_bomb_hits_the_process_limit(box: Sandbox) -> None:
    """Tried: fork until fork fails (children sleeping). Outcome: stops below the limit; all killed at exit."""
    marker = f"bomb-{uuid.uuid4().hex}"
    result = python(
        box,
        "import os, sys, time\nchildren = 0\nwhile True:\n    try:\n        pid = os.fork()\n"
        "    except OSError as error:\n        print('fork failed after', children, error, file=sys.stderr)\n"
        "        sys.exit(1)\n    if pid == 0:\n        time.sleep(60)\n        os._exit(0)\n    children += 1\n",
        args=[marker],
    )
    assert result.limit_hit == "processes", result
    assert int(result.stderr.split("fork failed after ")[1].split()[0]) < TEST_LIMITS.processes
    assert processes_with(marker) == []


def test_shell_fork_bomb_is_contained_and_the_host_stays_responsive(box: Sandbox) -> None:
    """Tried: the shell fork bomb b(){ b|b& }; b, for up to 3 s. Outcome: capped at 32 processes, then killed."""
    marker = f"bomb-{uuid.uuid4().hex}"
    outcome: list[RunResult] = []
    thread = threading.Thread(
        target=lambda: outcome.append(
            box.run(["sh", "-c", "b() { b | b & }; b; sleep 30", marker], limits=TEST_LIMITS.replace(wall_s=3))
        )
    )
    thread.start()
    time.sleep(1.0)
    latencies = [host_latency_s() for _ in range(5)]
    thread.join()
    (result,) = outcome
    # It ends one way or another: killed at the wall limit, or its shells give up on fork errors
    # (processes), or their error messages flood the output cap.
    assert result.limit_hit in ("wall", "processes", "output") and result.wall_s < 8, result
    assert max(latencies) < 2.0, latencies
    time.sleep(0.2)
    assert processes_with(marker) == []


def test_memory_bomb_hits_the_memory_limit(box: Sandbox) -> None:
    """Tried: allocate 4 GB in 64 MB chunks. Outcome: stopped at the limit (256 MB here), reported as memory."""
    result = python(
        box, "chunks = []\nfor _ in range(64):\n    chunks.append(bytearray(64 * 2**20))\nprint('allocated 4 GB')"
    )
    assert result.limit_hit == "memory", result
    assert "allocated 4 GB" not in result.stdout


@pytest.mark.skipif(isinstance(memory_groups(), str), reason=f"no memory cgroups here: {memory_groups()}")
def test_memory_of_many_processes_together_hits_the_runs_memory_limit(bwrap_box: Sandbox) -> None:
    """Tried: 8 processes of 150 MB each (every one under memory_mb, 1.2 GB together) with run_memory_mb 300.
    Outcome: the sandbox's cgroup holds them at 300 MB, the OOM killer ends some, reported as memory; the next run
    has the whole allowance again, and the cgroup goes with the sandbox."""
    limits = TEST_LIMITS.replace(run_memory_mb=300, wall_s=30, cpu_s=10)
    bomb = "for i in $(seq 8); do python3 -c 'import time; x = bytearray(150 << 20); time.sleep(2)' & done; wait"
    result = bwrap_box.run(bomb, limits=limits)
    assert result.limit_hit == "memory" and bwrap_box.memory_kills() > 0, result
    after = bwrap_box.run("python3 -c 'x = bytearray(200 << 20); print(len(x) >> 20)'", limits=limits)
    assert after.ok and after.stdout == "200\n", after
    group = bwrap_box.memory_group
    assert group is not None and group.path.is_dir()
    bwrap_box.close()
    assert not group.path.exists()


@pytest.mark.skipif(isinstance(memory_groups(), str), reason=f"no memory cgroups here: {memory_groups()}")
def test_a_killed_run_has_no_process_left_when_it_returns(bwrap_box: Sandbox) -> None:
    """Tried: four background writers past the wall limit, 10 times. Outcome: when each run returns, killed, its
    sandbox's cgroup holds no process (the run waits for the sandbox's init, which ends after the rest; before,
    every such run returned with its writers still alive, and one went on writing 10 MB into the work dir under
    a fresh machine's load)."""
    writers = "for i in 1 2 3 4; do (while :; do echo x >> f$i; done) & done; wait"
    group = bwrap_box.memory_group
    assert group is not None
    for _ in range(10):
        result = bwrap_box.run(writers, limits=TEST_LIMITS.replace(wall_s=0.3))
        assert result.limit_hit == "wall", result
        assert group.procs.read_text().split() == []


def test_infinite_loop_hits_the_cpu_limit(box: Sandbox) -> None:
    """Tried: while True: pass. Outcome: SIGXCPU after cpu_s (1 s here), reported as cpu."""
    result = python(box, "while True:\n    pass", limits=TEST_LIMITS.replace(cpu_s=1))
    assert result.limit_hit == "cpu" and result.exit_code == 128 + 24, result
    assert result.wall_s < 8


def test_huge_output_is_capped(box: Sandbox) -> None:
    """Tried: print forever (yes). Outcome: the run is killed once output_bytes (100 kB) is read; output cut there."""
    result = box.run("yes 'all work and no play'")
    assert result.limit_hit == "output" and result.truncated
    assert len(result.stdout.encode()) + len(result.stderr.encode()) == TEST_LIMITS.output_bytes
    assert result.wall_s < 8


def test_output_up_to_the_cap_is_kept_whole(bwrap_box: Sandbox) -> None:
    cap = TEST_LIMITS.output_bytes
    exact = python(bwrap_box, f"import sys; sys.stdout.write('x' * {cap - 3}); sys.stderr.write('err')")
    assert exact.ok and len(exact.stdout) == cap - 3 and exact.stderr == "err" and not exact.truncated
    over = python(bwrap_box, f"import sys; sys.stdout.write('x' * {cap - 2}); sys.stderr.write('err')")
    assert over.limit_hit == "output" and over.truncated and over.stderr == "err" and len(over.stdout) == cap - 3


def test_filling_tmp_and_shared_memory_stops_at_their_size(box: Sandbox) -> None:
    """Tried: fill /tmp and /dev/shm (RAM-backed) with 8 MB files, and write into /dev. Outcome: capped at 64 MB."""
    result = box.run(
        "for i in $(seq 20); do head -c 8000000 /dev/zero > /tmp/f$i || break; done; du -sm /tmp; "
        "for i in $(seq 20); do head -c 8000000 /dev/zero > /dev/shm/f$i || break; done; du -sm /dev/shm; "
        "touch /dev/x || echo dev-read-only"
    )
    assert "No space left on device" in result.stderr
    sizes = [int(line.split()[0]) for line in result.stdout.splitlines() if line.split()[-1] in ("/tmp", "/dev/shm")]
    assert len(sizes) == 2 and all(size <= TEST_LIMITS.tmp_mb for size in sizes), result.stdout
    if box.backend == "bwrap":
        assert "dev-read-only" in result.stdout


def test_big_file_hits_the_file_size_limit(box: Sandbox) -> None:
    """Tried: write a 100 MB file. Outcome: stopped at file_size_mb (8 MB here), reported as file_size."""
    result = box.run("head -c 100000000 /dev/zero > big")
    assert result.limit_hit == "file_size"
    assert (box.workdir / "big").stat().st_size <= TEST_LIMITS.file_size_mb * 2**20


def test_filling_the_work_dir_stops_at_its_disk_quota(box: Sandbox) -> None:
    """Tried: write 4 MB files in a loop (each under file_size_mb) for 30 s with a 24 MB disk quota. Outcome:
    killed within seconds, reported as disk, the work dir near the quota; a later run may still delete files."""
    from agentgym.sandbox.disk import tree_bytes

    limits = TEST_LIMITS.replace(wall_s=30, cpu_s=30, disk_mb=24)
    start = time.monotonic()
    result = box.run("i=0; while head -c 4000000 /dev/zero > fill$i; do i=$((i+1)); done", limits=limits)
    assert result.limit_hit == "disk" and result.exit_code == 137, result
    assert time.monotonic() - start < 20
    left = tree_bytes(box.workdir)
    assert 24 * 2**20 < left < 24 * 2**20 + 400 * 2**20, left  # over the quota by what 0.2 s of writing adds
    # Over the quota, a run that does not grow the work dir goes on: the agent can clean up.
    cleaned = box.run("rm -f fill1 fill2 && ls | wc -l", limits=limits)
    assert cleaned.ok, cleaned
    assert tree_bytes(box.workdir) < left
    grown = box.run("for i in $(seq 8); do head -c 4000000 /dev/zero > more$i; done; sleep 5", limits=limits)
    assert grown.limit_hit == "disk", grown


def test_sleeping_past_the_wall_limit_is_killed(box: Sandbox) -> None:
    """Tried: sleep 60 with a 1 s wall limit. Outcome: killed after 1 s with every process of the run."""
    marker = f"6{uuid.uuid4().int % 10**6}.5"
    start = time.monotonic()
    result = box.run(["sh", "-c", f"sleep {marker} & sleep {marker}"], limits=TEST_LIMITS.replace(wall_s=1))
    assert result.limit_hit == "wall" and result.exit_code == 137
    assert 0.9 < time.monotonic() - start < 5
    time.sleep(0.2)
    assert processes_with(f"sleep {marker}") == []


def test_killing_processes_outside_the_sandbox_fails(box: Sandbox) -> None:
    """Tried: kill -9 the pytest process and a host process of the sandbox's own uid, pkill python, kill -9 -1."""
    as_sandbox_user = ["setpriv", f"--reuid={box.uid}", f"--regid={box.gid}", "--clear-groups"]
    victim = subprocess.Popen([*(as_sandbox_user if os.geteuid() == 0 else []), "sleep", "300"])
    try:
        result = box.run(
            f"kill -9 {os.getpid()} || echo pytest-survives; kill -9 {victim.pid} || echo victim-survives; "
            "pkill -9 python3; pkill -9 sleep; ls /proc | grep -c '^[0-9]'; kill -9 -1"
        )
        assert "pytest-survives" in result.stdout and "victim-survives" in result.stdout
        visible = int(result.stdout.split()[-1])
        assert visible < 10  # only the sandbox's own processes are visible
        assert victim.poll() is None  # the host process lives
        assert box.run("echo still usable").stdout == "still usable\n"
    finally:
        victim.kill()
        victim.wait()


# ---- cleanup ------------------------------------------------------------------------------------


def test_close_removes_the_work_dir_and_leaves_no_processes() -> None:
    box = Sandbox(limits=TEST_LIMITS)
    root = box.workdir.parent
    box.run("mkdir -p d/e && echo x > d/e/f && chmod 000 d/e && chmod 500 d && sleep 30 &")
    assert box.workdir.exists()
    box.close()
    box.close()  # twice is fine
    assert not box.workdir.exists() and not root.exists()
    assert processes_with(str(root)) == []
    with pytest.raises(SandboxError, match="closed"):
        box.run("true")


def test_a_given_work_dir_is_kept() -> None:
    parent = Path(tempfile.mkdtemp())
    parent.chmod(0o711)  # a root process runs sandboxes as nobody, which must reach the work dir
    workdir = parent / "mine"
    try:
        with Sandbox(workdir=workdir, limits=TEST_LIMITS) as box:
            box.run("echo kept > f")
        assert (workdir / "f").read_text() == "kept\n"
    finally:
        shutil.rmtree(parent)


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root process hands the sandbox to nobody")
def test_a_work_dir_nobody_can_reach_is_refused(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(SandboxError, match="cannot reach"):
        Sandbox(workdir=private / "work")


def test_sandbox_is_removed_when_garbage_collected() -> None:
    box = Sandbox(limits=TEST_LIMITS)
    root = box.workdir.parent
    del box
    import gc

    gc.collect()
    assert not root.exists()
