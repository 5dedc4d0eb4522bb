"""The docker backend: ``gym.make(ID, backend="docker")`` from start to cleanup, and the Unix-socket server it uses.

The docker tests need the ``docker`` CLI, a running dockerd and the ``agentgym/core`` image
(``bash containers/setup-host.sh`` provides all three; the test command's ``--background-images`` builds the
image in the background, and tests/conftest.py waits for it before collecting); without them they are skipped,
saying which is missing. The Unix-socket tests run everywhere.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from images import CORE_BUILD, WAITS_FOR_BUILD
from test_server import assert_same_transitions, trajectory

import agentgym
from agentgym.serving.auth import API_KEYS_ENV
from agentgym.serving.backends.docker import (
    DEFAULT_IMAGE,
    DockerUnavailableError,
    EnvContainer,
    ImageNotFoundError,
    build_hint,
    container_user,
)
from agentgym.serving.client import RemoteEnv, ServerUnavailableError

pytestmark = WAITS_FOR_BUILD


def docker_missing() -> str | None:
    """Why the docker tests cannot run here, or None."""
    if shutil.which("docker") is None:
        return "no docker CLI (bash containers/setup-host.sh installs docker.io)"
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        return "dockerd is not reachable (bash containers/setup-host.sh starts it)"
    if subprocess.run(["docker", "image", "inspect", DEFAULT_IMAGE], capture_output=True).returncode != 0:
        return f"no {DEFAULT_IMAGE} image (build it: bash containers/build.sh)"
    return None


needs_docker = pytest.mark.skipif(docker_missing() is not None, reason=f"docker backend: {docker_missing()}")

ENVS = [
    ("Sokoban-v0", {}),
    ("FrozenLake-v0", {"is_slippery": True}),
    ("Maze-v0", {}),
    ("Wordle-v0", {}),
    ("TicTacToe-vs-Minimax-v0", {}),
]


def exists(container: str) -> bool:
    return subprocess.run(["docker", "container", "inspect", container], capture_output=True).returncode == 0


def wait_until_removed(container: str, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while exists(container) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not exists(container)


def inspect(container: str) -> dict[str, Any]:
    output = subprocess.run(["docker", "container", "inspect", container], capture_output=True, check=True).stdout
    return json.loads(output)[0]


def test_the_background_build_of_the_core_image_succeeded() -> None:
    """The docker tests are skipped without agentgym/core; when the test command's background job (setup-host.sh
    --background-images) was to build it and failed, this test fails with the end of its log."""
    CORE_BUILD.wait()


@needs_docker
@pytest.mark.parametrize(("env_id", "kwargs"), ENVS)
def test_docker_process_and_local_backends_play_the_same_episodes(env_id: str, kwargs: dict[str, Any]) -> None:
    test_task = agentgym.env_info(env_id).splits.ids("test")[2]
    local = gym.make(env_id, **kwargs)
    expected = trajectory(local, test_task, seed=7)
    for backend in ("docker", "process"):
        remote = gym.make(env_id, backend=backend, **kwargs)
        try:
            assert remote.spec.max_episode_steps == local.spec.max_episode_steps
            assert repr(remote.observation_space) == repr(local.observation_space)
            assert remote.unwrapped.splits == local.unwrapped.splits
            assert_same_transitions(trajectory(remote, test_task, seed=7), expected)
        finally:
            remote.close()


@needs_docker
def test_the_container_has_no_network_and_the_limits_asked_for() -> None:
    env = gym.make("Maze-v0", backend="docker", docker_memory="256m", docker_cpus=0.5, docker_pids_limit=64)
    try:
        env.reset(options={"task_id": 0})
        name = env.unwrapped.owned_server.name
        config = inspect(name)
        host = config["HostConfig"]
        assert host["NetworkMode"] == "none" and list(config["NetworkSettings"]["Networks"]) == ["none"]
        assert (host["Memory"], host["MemorySwap"]) == (256 * 2**20, 256 * 2**20)
        assert (host["NanoCpus"], host["PidsLimit"]) == (500_000_000, 64)
        assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"] and host["AutoRemove"]
        assert config["Config"]["User"] == "{}:{}".format(*container_user())
        assert config["Config"]["Labels"]["agentgym.backend"] == "docker"
        interfaces = subprocess.run(["docker", "exec", name, "ls", "/sys/class/net"], capture_output=True, text=True)
        assert interfaces.stdout.split() == ["lo"]  # nothing but loopback inside
    finally:
        env.close()
    defaults = gym.make("Maze-v0", backend="docker")
    try:
        host = inspect(defaults.unwrapped.owned_server.name)["HostConfig"]
        assert (host["Memory"], host["NanoCpus"], host["PidsLimit"]) == (2 * 2**30, 1_000_000_000, 256)
    finally:
        defaults.close()


@needs_docker
def test_closing_the_env_removes_its_container_and_socket_folder() -> None:
    env = gym.make("Sokoban-v0", backend="docker")
    container = env.unwrapped.owned_server
    env.reset(options={"task_id": 0})
    assert exists(container.name) and os.path.exists(container.uds)
    env.close()
    assert not exists(container.name) and not os.path.exists(container.directory)
    env.close()
    with pytest.raises(ServerUnavailableError, match="unix socket"):
        RemoteEnv(container.url, "Sokoban-v0", uds=container.uds, retries=0)


MAKE_AND_REPORT = (
    "import sys, time, gymnasium as gym, agentgym\n"
    "env = gym.make('Sokoban-v0', backend='docker')\n"
    "env.reset(options={'task_id': 0})\n"
    "print(env.unwrapped.owned_server.name, flush=True)\n"
)


@needs_docker
def test_the_container_is_removed_when_the_interpreter_exits_without_closing() -> None:
    output = subprocess.run([sys.executable, "-c", MAKE_AND_REPORT], capture_output=True, text=True, check=True)
    assert not exists(output.stdout.strip())  # removed before the interpreter exited


@needs_docker
def test_the_container_is_removed_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", MAKE_AND_REPORT + "time.sleep(120)\n"], stdout=subprocess.PIPE, text=True
    )
    try:
        container = parent.stdout.readline().strip()
        assert exists(container)
        parent.send_signal(signal.SIGKILL)  # no atexit, no finalizers: only the lifeline FIFO closes
        parent.wait()
        assert wait_until_removed(container)
    finally:
        parent.kill()
        parent.stdout.close()


@needs_docker
def test_a_missing_image_says_how_to_build_it() -> None:
    with pytest.raises(ImageNotFoundError, match=r"'agentgym/nope:missing' is not here.*containers/build\.sh"):
        gym.make("Sokoban-v0", backend="docker", docker_image="agentgym/nope:missing")


def test_the_build_hint_names_the_image_s_script_in_this_checkout() -> None:
    containers = Path(agentgym.__file__).resolve().parents[1] / "containers"
    if not (containers / "build.sh").is_file():
        pytest.skip("agentgym is not imported from a checkout")
    assert build_hint(DEFAULT_IMAGE) == f"build it with `bash {containers / 'build.sh'}`"
    assert build_hint("agentgym/webapps:tests") == f"build it with `bash {containers / 'webapps' / 'build.sh'}`"
    assert build_hint("agentgym/desktop:latest") == f"build it with `bash {containers / 'desktop' / 'build.sh'}`"


# What the image serves by default (compose.yaml's command too): every id on 0.0.0.0:8000, keys from the environment.
PROBE = """
import os, time, urllib.error, urllib.request
for _ in range(1200):
    try:
        urllib.request.urlopen("http://127.0.0.1:8000/health", timeout=2)
        break
    except OSError:
        time.sleep(0.1)
def status(headers):
    request = urllib.request.Request("http://127.0.0.1:8000/sessions", headers=headers)
    try:
        return urllib.request.urlopen(request, timeout=10).status
    except urllib.error.HTTPError as error:
        return error.code
key = os.environ["AGENTGYM_API_KEYS"]
print(status({}), status({"Authorization": "Bearer wrong"}), status({"Authorization": "Bearer " + key}))
"""


@needs_docker
def test_the_image_s_default_server_takes_its_key_from_the_environment() -> None:
    run = ["docker", "run", "--rm", "--network", "none", "--cap-drop", "ALL"]
    refused = subprocess.run([*run, DEFAULT_IMAGE], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2
    assert "refusing to listen on '0.0.0.0' without an API key" in refused.stderr
    name = f"agentgym-test-{secrets.token_hex(6)}"
    environment = {**os.environ, API_KEYS_ENV: secrets.token_urlsafe(32)}
    subprocess.run(
        [*run, "--detach", "--name", name, "--env", API_KEYS_ENV, DEFAULT_IMAGE], env=environment, check=True
    )
    try:
        probe = subprocess.run(["docker", "exec", name, "python3", "-c", PROBE], capture_output=True, text=True)
        assert probe.stdout.split() == ["401", "401", "200"], probe.stderr
    finally:
        subprocess.run(["docker", "rm", "--force", name], capture_output=True)


@needs_docker
def test_a_server_that_cannot_start_is_reported_with_its_output() -> None:
    with pytest.raises(RuntimeError, match="exited while starting:\n.*no registered env id matches 'Nope-v0'"):
        EnvContainer(["Nope-v0"])


def test_unreachable_docker_and_unknown_options_are_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TypeError, match="unknown docker backend argument.*docker_memry; known: docker_image"):
        gym.make("Sokoban-v0", backend="docker", docker_memry="1g")
    if shutil.which("docker") is not None:
        monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        with pytest.raises(DockerUnavailableError, match="cannot reach dockerd"):
            gym.make("Sokoban-v0", backend="docker")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(DockerUnavailableError, match="needs the 'docker' CLI"):
        gym.make("Sokoban-v0", backend="docker")


# ---- the server on a Unix socket (what the docker backend uses), no docker needed --------


def test_a_server_on_a_unix_socket_plays_the_local_episodes(tmp_path: Path) -> None:
    path = str(tmp_path / "server.sock")
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)  # a socket file left behind by a dead server is replaced
    stale.close()
    server = subprocess.Popen(
        [sys.executable, "-m", "agentgym.serving.server", "Maze-v0", "--uds", path, "--log-level", "warning"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout.readline().strip() == f"agentgym serve: Maze-v0 on unix:{path}"
        remote = RemoteEnv("http://maze-server", "Maze-v0", uds=path)
        local = gym.make("Maze-v0")
        assert remote.spec.kwargs["uds"] == path
        assert_same_transitions(trajectory(remote, 5, seed=3), trajectory(local, 5, seed=3))
        remote.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
        server.stdout.close()
    with pytest.raises(ServerUnavailableError, match=f"http://maze-server \\(unix socket {path}\\)"):
        RemoteEnv("http://maze-server", "Maze-v0", uds=path, retries=0)
