"""The ScienceWorld simulator (Scala, in the ``scienceworld`` package's jar) in a JVM of its own.

:class:`Engine` starts one JVM through py4j, talks to the simulator's ``PythonInterface``
and stops the JVM on :meth:`Engine.close`, when the engine is garbage-collected, and when
the Python process exits (the JVM is started with py4j's ``die_on_exit``: it quits when
its standard input, a pipe from this process, closes; so even a killed Python process
leaves no JVM behind). Unlike ``scienceworld.ScienceWorldEnv``, a step makes one call into
the JVM, not five (that wrapper also fetches the room, the inventory and every valid action
on each step), and the gold action sequence, which the simulator computes by playing the
task (seconds to a minute for some task types), is made only when asked for, in a second
simulator instance of the same JVM, so it never disturbs the episode being played.
"""

from __future__ import annotations

import collections
import contextlib
import os
import shutil
import subprocess
import weakref
from pathlib import Path

JAVA_HINT = "install Java 17, e.g. apt-get install openjdk-17-jre-headless (or set JAVA_HOME)"
#: Default JVM options. A bounded heap and the serial collector keep each copy's memory small
#: and flat and its threads few. Constant identity hash codes (``hashCode=2``) make the
#: simulator deterministic: it iterates over hash sets of objects, whose order otherwise
#: changes from JVM to JVM (the choices of an ambiguity prompt, which of two alike seeds a
#: command takes, and with it whether a gold action sequence still fits the world); it
#: also makes the Mendelian genetics tasks several times faster.
DEFAULT_JVM_OPTIONS = ("-Xmx1g", "-XX:+UseSerialGC", "-XX:+UnlockExperimentalVMOptions", "-XX:hashCode=2")


class JavaNotFoundError(RuntimeError):
    """No ``java`` executable: ScienceWorld's simulator needs a Java runtime."""


class EngineError(RuntimeError):
    """The JVM could not start, died, or a call into it failed."""


def find_java() -> str:
    """The ``java`` to run: ``$JAVA_HOME/bin/java`` if ``JAVA_HOME`` is set, else ``java`` on ``PATH``."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home, "bin", "java")
        if os.access(java, os.X_OK):
            return str(java)
        raise JavaNotFoundError(f"JAVA_HOME is {java_home!r} but {java} is not an executable; {JAVA_HINT}")
    java = shutil.which("java")
    if java is None:
        raise JavaNotFoundError(f"ScienceWorld needs a Java runtime and there is no 'java' on PATH: {JAVA_HINT}")
    return java


def _stop(gateway: object, process: subprocess.Popen) -> None:
    """Close the py4j connections and end the JVM (shared by close() and the finalizer)."""
    with contextlib.suppress(Exception):  # the sockets of a JVM that is already gone
        gateway.close(keep_callback_server=True)  # type: ignore[attr-defined]  # local sockets only
    if process.poll() is None:
        try:
            process.stdin.close()  # type: ignore[union-attr]  # die_on_exit: the JVM quits on EOF
            process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait(timeout=5)


class Engine:
    """One ScienceWorld simulator in its own JVM, started on construction."""

    def __init__(self, jvm_options: tuple[str, ...] = DEFAULT_JVM_OPTIONS) -> None:
        from py4j.java_gateway import GatewayParameters, JavaGateway, launch_gateway
        from scienceworld.constants import BASEPATH, JAR_PATH

        java = find_java()
        self._stderr: collections.deque[str] = collections.deque(maxlen=40)
        try:
            port, process = launch_gateway(
                classpath=JAR_PATH,
                javaopts=list(jvm_options),
                die_on_exit=True,
                cwd=BASEPATH,
                java_path=java,
                redirect_stderr=self._stderr,
                return_proc=True,
            )
        except (OSError, ValueError) as error:  # ValueError: the JVM exited before telling its port
            raise EngineError(f"could not start the ScienceWorld JVM with {java}: {error}; {self.stderr()}") from error
        self.process: subprocess.Popen = process
        # py4j's automatic release of Java objects runs in garbage-collection callbacks, which
        # (seen on Python 3.11) can break an ast.parse running at that moment; objects are
        # released explicitly instead (_release).
        self._gateway = JavaGateway(
            gateway_parameters=GatewayParameters(port=port, auto_field=True, enable_memory_management=False),
            java_process=process,
        )
        self._finalizer = weakref.finalize(self, _stop, self._gateway, process)
        self._server = self._call(self._gateway.jvm.scienceworld.runtime.pythonapi.PythonInterface)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self._finalizer.alive and self.process.poll() is None

    def stderr(self) -> str:
        """The JVM's last lines of standard error, for error messages."""
        lines = "".join(self._stderr).strip()
        return f"JVM stderr: {lines[-2000:]}" if lines else "the JVM wrote nothing to stderr"

    def close(self) -> None:
        """Stop the JVM (idempotent); waits until its process is gone."""
        self._finalizer()

    def check_alive(self) -> None:
        """Raise :class:`EngineError` if the JVM was closed or has died."""
        if not self._finalizer.alive:
            raise EngineError("the ScienceWorld JVM was closed")
        if self.process.poll() is not None:
            self.close()
            raise EngineError(
                f"the ScienceWorld JVM (pid {self.pid}) died with exit code {self.process.returncode} "
                f"(reset() starts a new one); {self.stderr()}"
            )

    def _call(self, function, *args):  # noqa: ANN001, ANN202  (a py4j method and its arguments)
        from py4j.protocol import Py4JError

        self.check_alive()
        try:
            return function(*args)
        except Py4JError as error:
            # py4j's own thread reaps the JVM when it exits (poll() cannot while that thread
            # waits): give it a moment to tell a dead JVM from a failed call.
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=2)
            self.check_alive()
            raise EngineError(f"ScienceWorld failed: {error}") from error

    # ---- the simulator ------------------------------------------------------------------

    def load(self, task: str, variation: int, simplifications: str) -> str:
        """Set up ``task``'s ``variation``; returns the first observation (the room, as after ``look around``)."""
        self._call(self._server.load, task, variation, simplifications, False)
        return self.step("look around")

    def step(self, command: str) -> str:
        """Play ``command``; returns the simulator's answer."""
        return self._call(self._server.step, command)

    def score(self) -> int:
        """The task's score: 0..100, or negative after a failure (e.g. focusing on the wrong object)."""
        return round(100 * self._call(self._server.getScore))

    def completed(self) -> bool:
        return bool(self._call(self._server.getCompleted))

    def task_description(self) -> str:
        return self._call(self._server.getTaskDescription)

    def look(self) -> str:
        """The room's description (a free action: no time passes)."""
        return self._call(self._server.freeActionLook)

    def inventory(self) -> str:
        """The inventory (a free action: no time passes)."""
        return self._call(self._server.freeActionInventory)

    def valid_actions(self) -> list[str]:
        """Every valid action-object combination now (hundreds; tens of milliseconds)."""
        return self._strings(self._call(self._server.getValidActionObjectCombinations))

    def _strings(self, java_list) -> list[str]:  # noqa: ANN001  (a py4j JavaList)
        """The strings of a Java list, which is then released in the JVM."""
        try:
            return [str(item) for item in self._call(list, java_list)]
        finally:
            self._release(java_list)

    def _release(self, java_object) -> None:  # noqa: ANN001  (a py4j JavaObject)
        """Let the JVM collect an object this process no longer uses (py4j's automatic release is off)."""
        from py4j.protocol import Py4JError

        with contextlib.suppress(Py4JError):  # a dead JVM has nothing left to release
            self._gateway.detach(java_object)

    def gold_actions(self, task: str, variation: int, simplifications: str) -> list[str]:
        """The simulator's gold action sequence for the task's variation, played after the first ``look around``.

        Computed in a second simulator instance of this JVM (seconds, up to a minute for
        the Mendelian genetics tasks), which is dropped afterwards. The loaded episode is not
        touched: the simulator's one global state, the counter that numbers new objects
        (reset by every load), is put back as it was, so objects the episode creates later
        get numbers of their own.
        """
        numbering = self._gateway.jvm.util.UniqueIdentifier
        count = self._call(numbering.count)
        planner = self._call(self._gateway.jvm.scienceworld.runtime.pythonapi.PythonInterface)
        try:
            self._call(planner.load, task, variation, simplifications, True)
            return self._strings(self._call(planner.getGoldActionSequence))
        finally:
            self._release(planner)
            self._call(getattr(numbering, "count_$eq"), count)
