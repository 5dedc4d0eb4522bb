"""A desktop session: an X server (Xvfb), a window manager (openbox) and real applications.

:class:`DesktopSession` starts Xvfb on a free display (``-displayfd``) and openbox with a
fixed configuration (normal windows maximised and undecorated, so window geometry is
the same for the same actions), launches applications into a home folder, executes
mouse and keyboard input with ``xdotool``, and reads the screen (Pillow's XCB grab), the
window list (``wmctrl``) and the pointer position.

Every process started for a session gets its own process session (``setsid``) and the
environment variable ``AGENTGYM_DESKTOP=<token>``; :meth:`DesktopSession.close` kills the
process groups and then sweeps ``/proc`` for anything still carrying the token (helpers
that daemonised themselves), so nothing outlives the session. ``close`` also runs when the
object is garbage-collected and at interpreter exit (a ``weakref.finalize``).

With ``accessibility=True`` the session runs its own D-Bus session bus, and
:meth:`accessibility_tree` dumps the AT-SPI tree of the applications (GTK exposes one)
with a helper run under Debian's ``/usr/bin/python3`` (PyGObject and the ``Atspi``
typelib are system packages).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: How long to wait for the X server, the window manager or an app's first window: generous, since a
#: loaded machine (or a container with one CPU) can take many seconds; waits end as soon as the state is there.
START_TIMEOUT_S = 30.0
#: How often the window list is asked for again when a window vanished during the query.
WINDOW_LIST_TRIES = 5
#: How long one ``xdotool``/``wmctrl`` call may take.
TOOL_TIMEOUT_S = 5.0
#: Input is settled when the screen and the window list stay unchanged for this long...
QUIET_S = 0.2
#: ...or after this long (an animation or a busy app), whichever comes first.
SETTLE_TIMEOUT_S = 3.0
#: Tries to start the X server and window manager before giving up.
START_ATTEMPTS = 3
#: The capability number of CAP_SETGID (linux/capability.h).
CAP_SETGID = 6
SYSTEM_PYTHON = "/usr/bin/python3"
A11Y_HELPER = Path(__file__).with_name("a11y_dump.py")

OPENBOX_CONFIG = """<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>
  <placement><policy>Smart</policy><center>yes</center></placement>
  <desktops><number>1</number></desktops>
  <applications>
    <application type="normal">
      <decor>no</decor><maximized>yes</maximized>
      <position force="yes"><x>0</x><y>0</y></position>
    </application>
  </applications>
</openbox_config>
"""


class DesktopError(RuntimeError):
    """The desktop cannot do what was asked (the X server died, a tool failed, an app did not start)."""


class XServerDied(DesktopError):
    """The session's X server is gone."""


@dataclass(frozen=True)
class Window:
    """A top-level window as the window manager reports it."""

    id: int
    wm_class: str
    title: str
    x: int
    y: int
    width: int
    height: int
    pid: int


@dataclass
class _Processes:
    """What :meth:`DesktopSession.close` kills: process groups and a /proc token; shared with the finalizer."""

    token: str
    root: str
    popens: list[subprocess.Popen]

    def kill_groups(self, popens: list[subprocess.Popen], gently: bool = False) -> None:
        """SIGKILL the process groups; ``gently``: SIGTERM first (Xvfb then removes its lock and socket)."""
        if gently:
            for popen in popens:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(popen.pid, signal.SIGTERM)
            for popen in popens:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    popen.wait(timeout=1)
        for popen in popens:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(popen.pid, signal.SIGKILL)
        for popen in popens:
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=5)

    def __call__(self) -> None:
        self.kill_groups(self.popens, gently=True)
        self.popens.clear()
        for pid in processes_with_token(self.token):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)


def processes_with_token(token: str) -> list[int]:
    """The live processes whose environment holds ``AGENTGYM_DESKTOP=token`` (zombies excluded)."""
    needle = f"AGENTGYM_DESKTOP={token}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as environ:
                if needle not in environ.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
        except OSError:
            continue
        found.append(int(entry.name))
    return found


class DesktopSession:
    """One X display with a window manager; apps are launched into ``home`` (see the module docstring)."""

    def __init__(self, width: int = 1024, height: int = 768, *, accessibility: bool = False) -> None:
        self.width, self.height = width, height
        self.accessibility = accessibility
        self.root = Path(tempfile.mkdtemp(prefix="agentgym-desktop-"))
        self.token = self.root.name
        self.home = self.root / "home"
        self.display = ""
        self._server: list[subprocess.Popen] = []  # Xvfb, openbox, dbus
        self._apps: list[subprocess.Popen] = []
        self._processes = _Processes(self.token, str(self.root), [])
        self._finalizer = weakref.finalize(self, self._processes)
        self._bus_address = f"unix:path={self.root}/no-bus"  # apps find no bus and start none
        for attempt in range(START_ATTEMPTS):
            try:
                self.start()
                break
            except DesktopError:
                if attempt == START_ATTEMPTS - 1:
                    self.close()
                    raise
                self.restart_server_only()

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the X server and the window manager (and the bus); raises :class:`DesktopError`."""
        self.home.mkdir(exist_ok=True)
        (self.root / "run").mkdir(mode=0o700, exist_ok=True)
        (self.root / "openbox.xml").write_text(OPENBOX_CONFIG)
        read_end, write_end = os.pipe()
        try:
            self._spawn(
                self._server,
                ["Xvfb", "-displayfd", str(write_end), "-screen", "0", f"{self.width}x{self.height}x24"]
                + ["-nolisten", "tcp", "-nocursor", "-noreset"],
                pass_fds=(write_end,),
            )
            os.close(write_end)
            write_end = -1
            number = _read_line(read_end, START_TIMEOUT_S).strip()
        finally:
            os.close(read_end)
            if write_end >= 0:
                os.close(write_end)
        if not number.isdigit():
            raise DesktopError(f"Xvfb did not start in {START_TIMEOUT_S:g} s:\n{self.log_tail()}")
        self.display = f":{number}"
        if self.accessibility:
            self._start_bus()
        openbox_argv = ["openbox", "--sm-disable", "--config-file", str(self.root / "openbox.xml")]
        openbox = self._spawn(self._server, openbox_argv)

        def managing() -> bool:
            # Ready when the window list can be read: openbox announces itself (what `wmctrl -m` checks) a
            # while before it sets _NET_CLIENT_LIST, and until then `wmctrl -l` fails.
            if openbox.poll() is not None:
                raise DesktopError(f"openbox exited with code {openbox.returncode} while starting:\n{self.log_tail()}")
            return self._list_windows().returncode == 0

        self._wait(managing, "the window manager to start")

    def _start_bus(self) -> None:
        address_file = self.root / "bus-address"
        bus = self._spawn(
            self._server,
            ["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address=unix:path={self.root}/bus"]
            + ["--print-address=1"],
            stdout=address_file.open("w"),
        )
        self._wait(lambda: address_file.read_text().strip() != "" or bus.poll() is not None, "the D-Bus session bus")
        self._bus_address = address_file.read_text().strip()

    def close(self) -> None:
        """Kill every process of the session and delete its files; safe to call twice."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def restart(self) -> None:
        """Kill everything (the X server too) and start afresh, keeping the same token and folder."""
        self.restart_server_only()
        self.start()

    def restart_server_only(self) -> None:
        """Kill the apps and the X server (and window manager and bus) without starting them again."""
        self.kill_apps()
        self._processes.kill_groups(self._server, gently=True)
        for popen in self._server:
            self._processes.popens.remove(popen)
        self._server.clear()

    def alive(self) -> bool:
        """Whether the X server still runs."""
        return bool(self._server) and self._server[0].poll() is None

    def new_home(self) -> Path:
        """Kill the apps and give the session an empty home folder with the apps' settings."""
        self.kill_apps()
        shutil.rmtree(self.home, ignore_errors=True)
        for folder in (".config/gtk-3.0", ".config/pcmanfm/default", ".config/libfm", ".cache", ".local/share"):
            (self.home / folder).mkdir(parents=True, exist_ok=True)
        # No blinking text cursor and no animations (a menu sliding open): the same state always gives the same pixels.
        (self.home / ".config/gtk-3.0/settings.ini").write_text(
            "[Settings]\ngtk-cursor-blink=false\ngtk-enable-animations=false\n"
        )
        (self.home / ".config/pcmanfm/default/pcmanfm.conf").write_text(
            "[ui]\nshow_statusbar=0\nview_mode=list\nshow_hidden=0\nsort=name;ascending;\n"
        )
        (self.home / ".config/libfm/libfm.conf").write_text(
            "[config]\nconfirm_del=0\nconfirm_trash=0\nsingle_click=0\nuse_trash=1\nquick_exec=1\n"
        )
        (self.home / ".bashrc").write_text("PS1='$ '\n")
        return self.home

    def kill_apps(self) -> None:
        """Kill the launched apps (and whatever they started)."""
        self._processes.kill_groups(self._apps)
        for popen in self._apps:
            with contextlib.suppress(ValueError):
                self._processes.popens.remove(popen)
        self._apps.clear()
        for pid in set(processes_with_token(self.token)) - {popen.pid for popen in self._server}:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if self.accessibility and self.alive():
            # The AT-SPI bus the first app started (its launcher, killed above) left its address on the root
            # window: apps started later would read it and find no bus, so their tree could not be read.
            self._tool("xprop", "-root", "-remove", "AT_SPI_BUS", check=False)

    def launch(self, argv: list[str], wm_class: str) -> subprocess.Popen:
        """Start an app in the home folder and wait until a window of class ``wm_class`` shows and settles."""
        before = {window.id for window in self.windows()}
        app = self._spawn(self._apps, argv, cwd=self.home)

        def mapped() -> bool:
            if app.poll() is not None:
                raise DesktopError(
                    f"{argv[0]} exited with code {app.returncode} while starting{_privilege_hint()}:\n{self.log_tail()}"
                )
            return any(w.wm_class == wm_class and w.id not in before for w in self.windows())

        self._wait(mapped, f"a {wm_class} window")
        self.settle()
        return app

    def app_states(self) -> list[str]:
        """Problems of the launched apps, as sentences (an exited or stopped app)."""
        problems = []
        for app in self._apps:
            name = Path(app.args[0]).name
            if app.poll() is not None:
                how = f"was killed by signal {-app.returncode}" if app.returncode < 0 else f"exited ({app.returncode})"
                problems.append(f"{name} {how}.")
            elif _process_state(app.pid) in ("T", "t"):
                problems.append(f"{name} is not responding (stopped).")
        return problems

    # ---- input --------------------------------------------------------------------------

    def xdotool(self, *arguments: str) -> None:
        """Run ``xdotool`` with ``arguments``; raises :class:`DesktopError` when it fails."""
        self._tool("xdotool", *arguments)

    def settle(self) -> bool:
        """Wait until the screen and window list stop changing; False when they did not in time."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        last, since = None, time.monotonic()
        while True:
            state = (self._grab_bytes(), self.windows())
            now = time.monotonic()
            if state != last:
                last, since = state, now
            elif now - since >= QUIET_S:
                return True
            if now >= deadline:
                return False
            time.sleep(0.04)

    # ---- what is on the screen ----------------------------------------------------------

    def screenshot(self) -> np.ndarray:
        """The screen as uint8 (height, width, 3); black when the X server is gone."""
        try:
            data = self._grab_bytes()
        except XServerDied:
            return np.zeros((self.height, self.width, 3), dtype=np.uint8)
        return np.frombuffer(data, dtype=np.uint8).reshape(self.height, self.width, 3).copy()

    def windows(self) -> tuple[Window, ...]:
        """The managed top-level windows, in stacking order of creation."""
        for _ in range(WINDOW_LIST_TRIES):
            result = self._list_windows()
            if result.returncode == 0 or "BadWindow" not in result.stderr:
                break
            time.sleep(0.05)  # a window closed while wmctrl read its properties: ask again
        if result.returncode != 0:
            if not self.alive():
                raise XServerDied("the X server is not running")
            raise DesktopError(f"wmctrl -lGpx failed: {result.stderr.strip()[:300]}")
        windows = []
        for line in result.stdout.splitlines():
            parts = line.split(None, 8)
            if len(parts) < 8:
                continue
            window_id, _, pid, x, y, width, height, wm_class = parts[:8]
            rest = parts[8] if len(parts) > 8 else ""
            title = rest.split(" ", 1)[1] if " " in rest else ""  # drop the host name column
            windows.append(
                Window(int(window_id, 16), wm_class, title, int(x), int(y), int(width), int(height), int(pid))
            )
        return tuple(windows)

    def active_window(self) -> int | None:
        result = self._tool("xdotool", "getactivewindow", check=False)
        return int(result.stdout) if result.returncode == 0 and result.stdout.strip().isdigit() else None

    def cursor(self) -> tuple[int, int]:
        """The pointer position (0, 0 when the X server is gone)."""
        try:
            fields = dict(item.split(":") for item in self._tool("xdotool", "getmouselocation").stdout.split())
            return int(fields["x"]), int(fields["y"])
        except (XServerDied, DesktopError, KeyError, ValueError):
            return 0, 0

    def accessibility_tree(self, max_lines: int = 200) -> str | None:
        """The AT-SPI tree of the apps as indented ``role "name"`` lines, or None without accessibility."""
        if not self.accessibility:
            return None
        result = self._dump_accessibility(max_lines)
        return result if result.startswith("(") else result.replace(str(self.home), "~")

    def accessibility_nodes(self, max_nodes: int = 200) -> list[dict] | str | None:
        """The AT-SPI tree's nodes in order (``depth``, ``role``, ``name``, screen ``box`` [x, y, width,
        height] or None, ``interactive``), or a parenthesised reason why they could not be read; None
        without accessibility."""
        if not self.accessibility:
            return None
        result = self._dump_accessibility(max_nodes, "--json")
        if result.startswith("("):
            return result
        try:
            nodes = json.loads(result)
        except json.JSONDecodeError:
            return "(the accessibility tree could not be read)"
        home = str(self.home)
        for node in nodes:
            node["name"] = node["name"].replace(home, "~")
        return nodes

    def _dump_accessibility(self, limit: int, *flags: str) -> str:
        """The helper's output, or a parenthesised reason why there is none."""
        try:
            result = subprocess.run(
                [SYSTEM_PYTHON, str(A11Y_HELPER), str(limit), *flags],
                env=self.environment(),
                capture_output=True,
                text=True,
                timeout=TOOL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return "(the accessibility tree did not answer in time)"
        if result.returncode != 0:
            return f"(no accessibility tree: {result.stderr.strip().splitlines()[-1:] or result.returncode})"
        return result.stdout.rstrip()

    # ---- internals ----------------------------------------------------------------------

    def environment(self) -> dict[str, str]:
        """The environment of every process of the session."""
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "TZ": "UTC",  # file times in the file manager and file dialogs read the same on every machine
            "HOME": str(self.home),
            "USER": os.environ.get("USER", "user"),
            "SHELL": "/bin/bash",
            "TERM": "xterm",
            "DISPLAY": self.display,
            "XDG_RUNTIME_DIR": str(self.root / "run"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "GSETTINGS_BACKEND": "memory",
            "DBUS_SESSION_BUS_ADDRESS": self._bus_address,
            "AGENTGYM_DESKTOP": self.token,
        }
        if not self.accessibility:
            env["NO_AT_BRIDGE"] = "1"
        else:
            env["GTK_MODULES"] = "gail:atk-bridge"
        return env

    def _spawn(self, group: list[subprocess.Popen], argv: list[str], **options) -> subprocess.Popen:
        with open(self.root / "session.log", "ab") as log:
            options.setdefault("stdout", log)
            try:
                popen = subprocess.Popen(
                    argv,
                    env=self.environment(),
                    stdin=subprocess.DEVNULL,
                    stderr=log,
                    start_new_session=True,
                    cwd=options.pop("cwd", self.root),
                    **options,
                )
            except OSError as error:
                raise DesktopError(f"cannot start {argv[0]}: {error}") from None
        group.append(popen)
        self._processes.popens.append(popen)
        return popen

    def _tool(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        if not self.alive():
            raise XServerDied("the X server is not running")
        try:
            result = subprocess.run(
                argv, env=self.environment(), capture_output=True, text=True, timeout=TOOL_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise DesktopError(f"{argv[0]} did not answer in {TOOL_TIMEOUT_S:g} s") from None
        if check and result.returncode != 0:
            if not self.alive():
                raise XServerDied("the X server is not running")
            raise DesktopError(f"{' '.join(argv[:2])} failed: {result.stderr.strip()[:300]}")
        return result

    def _list_windows(self) -> subprocess.CompletedProcess:
        return self._tool("wmctrl", "-lGpx", check=False)

    def _grab_bytes(self) -> bytes:
        from PIL import ImageGrab

        if not self.alive():
            raise XServerDied("the X server is not running")
        try:
            return ImageGrab.grab(xdisplay=self.display).convert("RGB").tobytes()
        except OSError as error:
            raise XServerDied(f"cannot read the screen: {error}") from None

    def _wait(self, condition, what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._check(condition, what):
            if time.monotonic() > deadline:
                raise DesktopError(f"timed out after {START_TIMEOUT_S:g} s waiting for {what}:\n{self.log_tail()}")
            time.sleep(0.02)

    def _check(self, condition, what: str) -> bool:
        try:
            return condition()
        except XServerDied:
            raise DesktopError(f"the X server exited while waiting for {what}:\n{self.log_tail()}") from None

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return (self.root / "session.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def _read_line(fd: int, timeout_s: float) -> str:
    """Read up to a newline (Xvfb writes the display number and the newline separately: closing the
    pipe between the two writes kills it), end of file, or the timeout."""
    data, deadline = b"", time.monotonic() + timeout_s
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(fd, 64) if ready else b""
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")


def _privilege_hint() -> str:
    """Why apps may fail to start here: root without CAP_SETGID (a container run as root with capabilities
    dropped), where xterm's child exits before running its command because its initgroups() call fails."""
    if os.geteuid() != 0:
        return ""
    try:
        with open("/proc/self/status") as status:
            effective = next(int(line.split()[1], 16) for line in status if line.startswith("CapEff:"))
    except (OSError, StopIteration, ValueError):
        return ""
    if effective & (1 << CAP_SETGID):
        return ""
    return " (this runs as root without CAP_SETGID, where xterm for one cannot start its shell: run as another user)"


def _process_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()
    except OSError:
        return "?"
