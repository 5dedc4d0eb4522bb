"""The docker backend: ``gym.make(ENV_ID, backend="docker", **kwargs)``.

The env runs in a new container of its family's image (:func:`image_for`: ``agentgym/core:latest``,
built by ``bash containers/build.sh``, but for the families in :data:`FAMILY_IMAGES`, built by
``containers/<family>/build.sh``). The container runs
``agentgym serve ENV_ID --uds /run/agentgym/server.sock``: the server listens on a Unix
socket in a fresh host folder bind-mounted at ``/run/agentgym``, so that no network is
needed, and ``gym.make`` returns a :class:`~agentgym.serving.client.RemoteEnv` on that socket which
owns the container. Episodes are the local env's, as with the ``process`` backend.

* **Isolation**: ``--network none`` (families in :data:`NETWORK_FAMILIES` excepted: none
  yet), ``--memory`` (with no swap beyond it), ``--cpus`` and ``--pids-limit``, every
  capability dropped, no privilege escalation, and the caller's uid and gid (the socket the
  server creates is then the caller's to connect to); a root caller's containers run as nobody
  (:data:`ROOT_CALLER_USER`), since root without capabilities breaks programs that act
  differently for root (xterm, whose child calls ``initgroups`` and exits when that fails).
* **Key**: the server takes a key of its own, passed in the container's environment
  (``$AGENTGYM_API_KEYS``), never on a command line; the env sends it.
* **Cleanup**: the container is removed (``docker rm --force``) when the env is closed or
  garbage-collected and at interpreter exit. When this process dies without cleaning up
  (``kill -9``), the server exits by itself: it reads a FIFO in the shared folder that only
  this process holds open for writing, and sees end-of-file; ``docker run --rm`` then
  removes the container. Containers carry the labels ``agentgym.backend=docker`` and
  ``agentgym.parent=HOST:PID``: ``docker ps --filter label=agentgym.backend=docker`` lists them.
* **Errors**: :class:`DockerUnavailableError` when there is no ``docker`` CLI or dockerd
  cannot be reached, :class:`ImageNotFoundError` (saying how to build it) when the image is
  missing (it is never pulled), ``RuntimeError`` with the server's output when it exits
  while starting, ``TimeoutError`` when it does not answer in time.

Keyword arguments of ``gym.make`` for this backend (taken out before the rest goes to the
env's constructor; None removes a limit; :data:`FAMILY_DEFAULTS` changes some defaults per family):

* ``docker_image``: the image (default: :func:`image_for` the env's family);
* ``docker_memory``: ``--memory`` (default ``"2g"``);
* ``docker_cpus``: ``--cpus`` (default 1.0);
* ``docker_pids_limit``: ``--pids-limit`` (default 256);
* ``docker_network``: ``--network`` (default ``"none"``, ``"bridge"`` for families in
  :data:`NETWORK_FAMILIES`);
* ``docker_startup_timeout``: seconds the server may take to answer (default 60).

Needs the ``docker`` CLI and a dockerd on this machine that sees this machine's ``/tmp``
(a remote ``DOCKER_HOST`` cannot bind-mount the socket folder; rootless Docker's uid mapping
keeps the server from writing the socket there).
"""

from __future__ import annotations

import atexit
import errno
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.contract.registry import env_info
from agentgym.sandbox import UNPRIVILEGED_GID, UNPRIVILEGED_UID
from agentgym.serving.auth import API_KEYS_ENV
from agentgym.serving.client import RemoteEnv, open_remote_env, tls_context

#: The image of every family without its own in :data:`FAMILY_IMAGES`.
DEFAULT_IMAGE = "agentgym/core:latest"
#: Family -> image, for families that need another image than :data:`DEFAULT_IMAGE`.
FAMILY_IMAGES: dict[str, str] = {"desktop": "agentgym/desktop:latest", "webapps": "agentgym/webapps:latest"}
#: Families whose envs need a network; every other family runs with ``--network none``.
NETWORK_FAMILIES: frozenset[str] = frozenset()
#: The uid and gid of the containers of a root caller (root can use any user's socket).
ROOT_CALLER_USER = (UNPRIVILEGED_UID, UNPRIVILEGED_GID)
#: Defaults of the ``docker_*`` keyword arguments (see the module docstring).
DEFAULTS: dict[str, Any] = {"memory": "2g", "cpus": 1.0, "pids_limit": 256, "startup_timeout": 60.0}
#: Family -> the defaults it changes: the web apps run five sites, PostgreSQL and Chromium in one container.
#: WebApps' server brings its sites up before it listens (``agentgym serve`` prepares its envs), which takes
#: longer than the default startup timeout.
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "webapps": {"memory": "4g", "cpus": 2.0, "pids_limit": 4096, "startup_timeout": 300.0}
}
#: How long ``docker rm --force`` may take before the container is left to its lifeline.
STOP_TIMEOUT_S = 30.0
#: Where the shared folder is mounted in the container.
CONTAINER_DIR = "/run/agentgym"
#: The container's command: ``agentgym serve`` on the socket, exiting when the lifeline FIFO closes.
SERVE_SCRIPT = (
    f'exec agentgym serve "$@" --uds {CONTAINER_DIR}/server.sock --exit-with-fd 3 '
    f"3<{CONTAINER_DIR}/lifeline >{CONTAINER_DIR}/server.log 2>&1"
)


class DockerError(RuntimeError):
    """``docker`` failed to start an env container."""


class DockerUnavailableError(DockerError):
    """There is no ``docker`` CLI, or dockerd cannot be reached."""


class ImageNotFoundError(DockerError):
    """The env's image is not on this machine (it is never pulled)."""


def image_for(env_id: str) -> str:
    """The image that runs ``env_id``: its family's in :data:`FAMILY_IMAGES`, else :data:`DEFAULT_IMAGE`."""
    return FAMILY_IMAGES.get(env_info(env_id).family, DEFAULT_IMAGE)


def make_docker(env_id: str, kwargs: dict[str, Any]) -> RemoteEnv:
    """The env in a new container (see the module docstring)."""
    env_kwargs = {key: value for key, value in kwargs.items() if not key.startswith("docker_")}
    options = {key.removeprefix("docker_"): value for key, value in kwargs.items() if key.startswith("docker_")}
    known = ("image", "network", *DEFAULTS)
    unknown = sorted(set(options) - set(known))
    if unknown:
        names = ", ".join(f"docker_{name}" for name in known)
        raise TypeError(
            f"unknown docker backend argument(s) {', '.join(f'docker_{n}' for n in unknown)}; known: {names}"
        )
    family = env_info(env_id).family
    container = EnvContainer(
        [env_id],
        image=options.pop("image", None) or image_for(env_id),
        network=options.pop("network", None) or ("bridge" if family in NETWORK_FAMILIES else "none"),
        api_key=secrets.token_urlsafe(32),
        **{**DEFAULTS, **FAMILY_DEFAULTS.get(family, {}), **options},
    )
    # No step limit on the server: gym.make applies TimeLimit on this side.
    return open_remote_env(container, env_id, env_kwargs, max_episode_steps=-1, uds=container.uds)


class EnvContainer:
    """``agentgym serve ENV_ID ...`` in a new container, reached through a Unix socket.

    ``url`` names the container (``http://NAME``, for messages and the ``Host`` header);
    ``uds`` is the socket's path here; ``log_path`` holds the server's output while the
    container runs. The constructor returns when ``/health`` answers; :meth:`stop` removes
    the container (also run when the object is garbage-collected and at interpreter exit).
    ``memory``, ``cpus`` and ``pids_limit`` None leave that resource unlimited. With ``api_key``, the
    server takes that key alone (else none).
    """

    def __init__(
        self,
        env_ids: Sequence[str],
        *,
        image: str = DEFAULT_IMAGE,
        memory: str | None = DEFAULTS["memory"],
        cpus: float | None = DEFAULTS["cpus"],
        pids_limit: int | None = DEFAULTS["pids_limit"],
        network: str = "none",
        startup_timeout: float = DEFAULTS["startup_timeout"],
        max_sessions: int = 16,
        docker: str = "docker",
        api_key: str | None = None,
    ) -> None:
        self.image = image
        self.api_key = api_key
        self.name = f"agentgym-{secrets.token_hex(6)}"
        self.url = f"http://{self.name}"
        self.directory = _socket_directory()
        self.uds = os.path.join(self.directory, "server.sock")
        self.log_path = os.path.join(self.directory, "server.log")
        lifeline = os.path.join(self.directory, "lifeline")
        os.mkfifo(lifeline, 0o600)
        uid, gid = container_user()
        if (uid, gid) != (os.getuid(), os.getgid()):  # the container's user makes the socket and reads the lifeline
            for path in (self.directory, lifeline):
                os.chown(path, uid, gid)
        # Read-write, so that opening it never blocks; the server holds the only read-only end.
        cleanup = _Cleanup(docker, self.name, os.open(lifeline, os.O_RDWR), self.directory, os.getpid())
        self._stopper = weakref.finalize(self, cleanup)
        self._stopper.atexit = False  # _remove_all_at_exit removes them all with one `docker rm`
        _LIVE[self.name] = cleanup
        limits = {"--memory": memory, "--memory-swap": memory, "--cpus": cpus, "--pids-limit": pids_limit}
        command = [
            *(docker, "run", "--detach", "--rm", "--pull", "never", "--name", self.name),
            *("--label", "agentgym.backend=docker", "--label", f"agentgym.parent={socket.gethostname()}:{os.getpid()}"),
            *("--network", network, "--user", f"{uid}:{gid}"),
            *(("--env", API_KEYS_ENV) if api_key is not None else ()),  # its value from `docker run`'s environment
            *("--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--stop-timeout", "5"),
            *(item for flag, value in limits.items() if value is not None for item in (flag, str(value))),
            *("--mount", f"type=bind,source={self.directory},target={CONTAINER_DIR}"),
            *("--entrypoint", "/bin/sh", image, "-c", SERVE_SCRIPT, "agentgym-serve", *env_ids),
            *("--max-sessions", str(max_sessions), "--session-ttl", "0", "--log-level", "warning"),
        ]
        try:
            self._start(command, docker, startup_timeout, api_key)
            self._wait_until_healthy(docker, startup_timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Remove the container and the socket folder; safe to call twice."""
        self._stopper()

    def running(self, docker: str = "docker") -> bool:
        """Whether the container exists and runs."""
        inspect = [docker, "container", "inspect", "--format", "{{.State.Running}}", self.name]
        try:
            result = subprocess.run(inspect, capture_output=True, text=True, timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return True  # dockerd is slow, not the container gone
        return result.returncode == 0 and result.stdout.strip() == "true"

    def _start(self, command: list[str], docker: str, timeout_s: float, api_key: str | None) -> None:
        environment = {**os.environ, **({API_KEYS_ENV: api_key} if api_key is not None else {})}
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=environment)
        except FileNotFoundError:
            raise DockerUnavailableError(
                f"the docker backend needs the {docker!r} CLI and a running dockerd (apt-get install docker.io)"
            ) from None
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"`docker run` of {self.image} did not return in {timeout_s:g} s") from None
        if result.returncode == 0:
            return
        error = result.stderr.strip().splitlines()[0] if result.stderr.strip() else f"exit code {result.returncode}"
        if "No such image" in error or "pull access denied" in error:
            raise ImageNotFoundError(
                f"docker image {self.image!r} is not here (it is never pulled): {build_hint(self.image)}"
            )
        if "Cannot connect to the Docker daemon" in error or ("docker.sock" in error and "permission denied" in error):
            raise DockerUnavailableError(
                f"cannot reach dockerd ({error}); start it (as root: `dockerd > /tmp/dockerd.log 2>&1 &`) "
                "or give this user access to its socket"
            )
        raise DockerError(f"`docker run` of {self.image} failed: {error}")

    def _wait_until_healthy(self, docker: str, timeout_s: float) -> None:
        """Poll ``/health`` on the socket; check now and then that the container still runs."""
        import httpx

        deadline = time.monotonic() + timeout_s
        next_check = time.monotonic() + 0.5
        transport = httpx.HTTPTransport(uds=self.uds, verify=tls_context())
        with httpx.Client(transport=transport, base_url=self.url, timeout=timeout_s, trust_env=False) as client:
            while True:
                if os.path.exists(self.uds):
                    try:
                        client.get("/health").raise_for_status()
                        return
                    except httpx.TransportError:
                        pass
                now = time.monotonic()
                if now >= next_check:
                    if not self.running(docker):
                        raise RuntimeError(f"agentgym server in {self.image} exited while starting:\n{self._output()}")
                    next_check = now + 0.5
                if now >= deadline:
                    raise TimeoutError(
                        f"agentgym server in container {self.name} ({self.image}) did not answer in {timeout_s:g} s:\n"
                        f"{self._output()}"
                    )
                time.sleep(0.01)

    def _output(self) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")[-4000:]
        except OSError:
            return "(no output)"


def container_user() -> tuple[int, int]:
    """The uid and gid that containers run as: the caller's, or :data:`ROOT_CALLER_USER` for root."""
    return ROOT_CALLER_USER if os.getuid() == 0 else (os.getuid(), os.getgid())


def build_hint(image: str) -> str:
    """How to build ``image``: its family's ``containers/<family>/build.sh`` for the images of
    :data:`FAMILY_IMAGES` (any tag), else ``containers/build.sh``; the script's path when agentgym runs
    from a checkout."""
    name = image.rsplit(":", 1)[0]
    family = next((family for family, known in FAMILY_IMAGES.items() if known.rsplit(":", 1)[0] == name), None)
    relative = f"containers/{family}/build.sh" if family else "containers/build.sh"
    script = Path(__file__).resolve().parents[3] / relative  # agentgym/serving/backends/docker.py in a checkout
    where = script if script.is_file() else f"{relative} in an agentgym checkout"
    return f"build it with `bash {where}`"


def _socket_directory() -> str:
    """A new private folder for the socket, in the temp dir unless its path is too long for a socket."""
    _sweep_stale_directories()
    directory = tempfile.mkdtemp(prefix="agentgym-docker-")
    if len(directory) + len("/server.sock") < 100:
        return directory
    os.rmdir(directory)
    return tempfile.mkdtemp(prefix="agentgym-docker-", dir="/tmp")


@dataclass
class _Cleanup:
    """What removing one container takes; runs once."""

    docker: str
    name: str
    lifeline_fd: int
    directory: str
    owner_pid: int

    def __call__(self) -> None:
        _remove_containers(self.docker, [self])

    def release(self) -> None:
        """Close the lifeline and delete the socket folder (after the container is gone, or failing that)."""
        _LIVE.pop(self.name, None)
        os.close(self.lifeline_fd)
        if os.getpid() == self.owner_pid:
            shutil.rmtree(self.directory, ignore_errors=True)


#: The containers this process started and has not removed yet, by name.
_LIVE: dict[str, _Cleanup] = {}


def _sweep_stale_directories(min_age_s: float = 60.0) -> None:
    """Delete the socket folders of containers that are gone (left when their parent was killed).

    A folder is stale when nothing holds its lifeline FIFO open for reading: neither a server
    nor the process that made it (which holds it read-write). Opening the FIFO write-only
    without blocking then fails with ``ENXIO``.
    """
    for root in {tempfile.gettempdir(), "/tmp"}:
        for directory in Path(root).glob("agentgym-docker-*"):
            try:
                if time.time() - directory.stat().st_mtime < min_age_s:
                    continue  # perhaps being set up right now
                os.close(os.open(directory / "lifeline", os.O_WRONLY | os.O_NONBLOCK))
            except OSError as error:
                if error.errno == errno.ENXIO:
                    shutil.rmtree(directory, ignore_errors=True)


def _remove_containers(docker: str, cleanups: list[_Cleanup]) -> None:
    """``docker rm --force`` the containers (only from the process that started them, not a forked child)."""
    names = [cleanup.name for cleanup in cleanups if cleanup.owner_pid == os.getpid()]
    try:
        if names:
            subprocess.run([docker, "rm", "--force", *names], capture_output=True, timeout=STOP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        pass  # each server still exits when its lifeline closes, and --rm removes its container
    finally:
        for cleanup in cleanups:
            cleanup.release()


@atexit.register
def _remove_all_at_exit() -> None:
    """At interpreter exit, the containers still running, with one ``docker rm`` per CLI."""
    by_docker: dict[str, list[_Cleanup]] = {}
    for cleanup in list(_LIVE.values()):
        by_docker.setdefault(cleanup.docker, []).append(cleanup)
    for docker, cleanups in by_docker.items():
        _remove_containers(docker, cleanups)
