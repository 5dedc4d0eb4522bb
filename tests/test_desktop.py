"""Desktop-v0: actions, oracles on every template, screenshots, and robustness (crashes, hangs, a dying X server,
eight desktops at once) with no process left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import numpy as np
import pytest
from episodes import play_oracle

import agentgym
from agentgym.contract.core import InvalidAction
from agentgym.environments.desktop.actions import parse_command, xdotool_calls
from agentgym.environments.desktop.session import processes_with_token
from agentgym.environments.desktop.tasks import TEMPLATES

TOOLS = ("Xvfb", "openbox", "xdotool", "wmctrl", "xterm", "mousepad", "pcmanfm", "gnumeric", "ssconvert")
missing = [tool for tool in TOOLS if shutil.which(tool) is None]
needs_desktop = pytest.mark.skipif(
    bool(missing), reason=f"missing desktop programs {missing} (containers/setup-host.sh)"
)


@pytest.fixture(scope="module")
def env():
    env = gym.make("Desktop-v0")
    yield env
    env.close()


# ---- actions (no X server needed) -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name", "arguments"),
    [
        ("click(10, 20)", "click", (10, 20)),
        ("pyautogui.doubleClick(x=5, y=6)", "double_click", (5, 6)),
        ("drag(1, 2, 3, 4)", "drag", (1, 2, 3, 4)),
        ('type("a\\nb")', "type", ("a\nb",)),
        ('key("ctrl+s")', "key", ("ctrl+s",)),
        ('hotkey("Ctrl+Shift+N")', "key", ("ctrl+shift+N",)),
        ('key("enter esc pagedown f2")', "key", ("Return Escape Next F2",)),
        ("scroll(0, -3)", "scroll", (0, -3)),
        ("wait(0.5)", "wait", (0.5,)),
        ("done()", "done", ()),
    ],
)
def test_parse_valid_actions(text: str, name: str, arguments: tuple) -> None:
    command = parse_command(text, 1024, 768)
    assert (command.name, command.args) == (name, arguments)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("click(2000, 5)", "x coordinate"),
        ("click(1, 2, 3)", "takes 2"),
        ("fly(1, 2)", "unknown action"),
        ("click(a, b)", "literal"),
        ('key("ctrl+banana")', "unknown key"),
        ("type(5)", "string"),
        ('type("\\x07")', "control"),
        ("wait(99)", "seconds"),
        ("open the editor", "expected a call"),
        ("", "no action"),
        ("click(" + "1" * 20_000 + ")", "longer"),
    ],
)
def test_parse_invalid_actions(text: str, complaint: str) -> None:
    with pytest.raises(InvalidAction, match=complaint):
        parse_command(text, 1024, 768)


def test_typed_newlines_become_return_keys() -> None:
    calls = xdotool_calls(parse_command('type("ab\\ncd")', 1024, 768))
    assert calls == [["type", "--delay", "8", "--", "ab"], ["key", "Return"], ["type", "--delay", "8", "--", "cd"]]


def test_templates_are_many_and_cover_every_app() -> None:
    base_tasks = [template(__import__("random").Random(1)) for template in TEMPLATES]
    assert len(TEMPLATES) >= 40
    assert {task.app for task in base_tasks} == {"terminal", "editor", "files", "spreadsheet"}
    assert len({task.template + task.app for task in base_tasks}) == len(TEMPLATES)


# ---- on a real desktop --------------------------------------------------------------------


#: Desktops that play the templates side by side: an episode mostly waits for the screen to settle.
ORACLE_DESKTOPS = 4


@needs_desktop
def test_oracle_solves_every_template(env: gym.Env) -> None:
    """One test-split task per template (the test ids start at a multiple of the template count),
    played on ``ORACLE_DESKTOPS`` desktops at once (this module's env and fresh ones), every n-th template each."""
    test_ids = agentgym.env_info("Desktop-v0").splits.ids("test")
    count = len(env.unwrapped.templates)
    assert test_ids.start % count == 0
    envs = [env] + [gym.make("Desktop-v0") for _ in range(ORACLE_DESKTOPS - 1)]
    try:
        with ThreadPoolExecutor(len(envs)) as pool:
            shares = pool.map(
                lambda i: [play_oracle(envs[i], task_id) for task_id in test_ids[i:count:ORACLE_DESKTOPS]],
                range(len(envs)),
            )
            results = sorted((result for share in shares for result in share), key=lambda result: result.task_id)
    finally:
        for extra in envs[1:]:
            extra.close()
    assert [result.task_id for result in results] == list(test_ids[:count])
    failures = [(r.task_id, env.unwrapped.templates[r.task_id % count].__name__) for r in results if not r.success]
    rate = 1 - len(failures) / count
    print(f"oracle success {rate:.1%} over {count} templates; failures {failures}")
    assert rate >= 0.95, failures


@needs_desktop
def test_screenshot_shows_what_the_oracle_typed(env: gym.Env) -> None:
    """Typing a command in the terminal changes the pixels of the terminal's first line and nothing far below it."""
    observation, _ = env.reset(options={"task_id": 0})  # make_folder: the terminal
    assert env.unwrapped.task.app == "terminal"
    before = observation["screenshot"]
    assert before.shape == (768, 1024, 3) and before.dtype == np.uint8
    observation, *_ = env.step(env.unwrapped.oracle_action())  # types "mkdir NAME" and Enter
    changed_rows = np.flatnonzero((observation["screenshot"] != before).any(axis=(1, 2)))
    assert changed_rows.size > 0, "the screen did not change"
    assert changed_rows.max() < 80, f"rows changed down to {changed_rows.max()}: more than the first lines"
    # The command ran: a new prompt on the next line, the folder exists.
    assert env.unwrapped.task.check(env.unwrapped.session.home) is None


@needs_desktop
def test_observation_lists_windows_and_cursor(env: gym.Env) -> None:
    observation, info = env.reset(options={"task_id": 19})  # write_text: the editor
    assert env.observation_space.contains(observation)
    assert '.txt - Mousepad" (mousepad.Mousepad): 0, 0, 1024x768 [focused]' in observation["text"]
    observation, _, _, _, info = env.step("move(100, 200)")
    assert observation["cursor"].tolist() == [100, 200] and "Mouse pointer: (100, 200)" in observation["text"]
    observation, reward, terminated, _, info = env.step("click(5000, 1)")
    assert info["invalid_action"] and "x coordinate" in observation["text"] and not terminated


@needs_desktop
def test_two_click_actions_are_never_one_double_click(env: gym.Env) -> None:
    """An app takes two clicks within its double-click time (GTK's 400 ms) as a double click, which selects a
    word in the editor; two click actions on the same word, however quickly they follow, leave it unselected."""
    observation, _ = env.reset(options={"task_id": 19})  # write_text: the editor
    before = observation["screenshot"]
    observation, *_ = env.step('type("alpha beta gamma")')
    rows, columns = np.nonzero((observation["screenshot"] != before).any(axis=2))
    word = f"click({columns.min() + 12}, {(rows.min() + rows.max()) // 2})"  # inside "alpha"
    once, *_ = env.step(word)
    twice, *_ = env.step(word)
    assert np.array_equal(twice["screenshot"], once["screenshot"]), "the second click selected the word"


@needs_desktop
def test_crashed_and_hung_apps_are_reported_and_killed(env: gym.Env) -> None:
    env.reset(options={"task_id": 19})
    session = env.unwrapped.session
    app = session._apps[0]
    os.kill(app.pid, signal.SIGSTOP)  # hangs: X input still goes out, the app does not draw
    start = time.monotonic()
    observation, _, terminated, _, info = env.step('type("hello")')
    assert time.monotonic() - start < 10 and not terminated
    assert "mousepad is not responding" in observation["text"]
    env.reset(options={"task_id": 19})  # kills the stopped app
    assert app.poll() is not None
    os.kill(session._apps[0].pid, signal.SIGKILL)  # crashes
    observation, _, terminated, _, info = env.step("click(10, 10)")
    assert "mousepad was killed by signal 9" in observation["text"] and not terminated
    observation, reward, terminated, _, info = env.step("done()")
    assert terminated and not info["success"] and reward == 0.0


@needs_desktop
def test_x_server_dying_ends_the_episode_and_reset_recovers(env: gym.Env) -> None:
    env.reset(options={"task_id": 0})
    session = env.unwrapped.session
    os.kill(session._server[0].pid, signal.SIGKILL)
    session._server[0].wait(timeout=10)  # dead before the next action, however loaded the machine
    observation, reward, terminated, _, info = env.step('type("ls")')
    assert terminated and not info["success"] and "X server died" in observation["text"], observation["text"]
    assert not observation["screenshot"].any()  # black: nothing to read
    assert env.observation_space.contains(observation)
    observation, info = env.reset(options={"task_id": 0})
    assert session.alive() and "Terminal" in observation["text"]
    assert play_oracle(env, 0).success


@needs_desktop
def test_eight_concurrent_desktops_leave_no_process_behind() -> None:
    """Every process of a session carries its token (inherited through the environment), so no process of
    these eight is left when none carries their tokens; desktops of tests on another pytest worker are not
    these tests' to count."""
    envs = [gym.make("Desktop-v0") for _ in range(8)]
    task_ids = [0, 19, 29, 35, 3, 22, 30, 37]  # every app

    def play(pair: tuple[gym.Env, int]) -> bool:
        return play_oracle(*pair).success

    with ThreadPoolExecutor(8) as pool:
        successes = list(pool.map(play, zip(envs, task_ids)))
    displays = {env.unwrapped.session.display for env in envs}
    tokens = [env.unwrapped.session.token for env in envs]
    assert len(displays) == 8, displays
    assert all(processes_with_token(token) for token in tokens)
    for env in envs:
        env.close()
    print(f"8 concurrent desktops: {sum(successes)}/8 oracle successes")
    assert sum(successes) >= 7
    assert not any(processes_with_token(token) for token in tokens)


@needs_desktop
def test_garbage_collected_env_leaves_no_process() -> None:
    env = gym.make("Desktop-v0")
    env.reset(options={"task_id": 29})
    token = env.unwrapped.session.token
    assert processes_with_token(token)
    del env
    import gc

    gc.collect()
    assert not processes_with_token(token)


def atspi_missing() -> str | None:
    """What of AT-SPI is not installed here (containers/setup-host.sh installs it all), or None.

    Checked apart from the env, so that an accessibility tree the env fails to read is a failure, not a skip.
    """
    if shutil.which("dbus-daemon") is None:
        return "no dbus-daemon (apt-get install dbus-x11)"
    if not os.path.exists("/usr/share/dbus-1/services/org.a11y.Bus.service"):
        return "no AT-SPI bus (apt-get install at-spi2-core)"
    probe = "import gi; gi.require_version('Atspi', '2.0'); from gi.repository import Atspi"
    if not os.path.exists("/usr/bin/python3") or subprocess.run(["/usr/bin/python3", "-c", probe]).returncode:
        return "AT-SPI is unavailable under /usr/bin/python3 (apt-get install python3-gi gir1.2-atspi-2.0)"
    return None


@needs_desktop
def test_accessibility_tree_lists_the_editor_and_its_bus_is_cleaned_up() -> None:
    if reason := atspi_missing():
        pytest.skip(reason)
    env = gym.make("Desktop-v0", accessibility=True)
    try:
        observation, _ = env.reset(options={"task_id": 19})
        token = env.unwrapped.session.token
        # A second reset kills the apps and the AT-SPI bus the first one started: its address must not outlive it.
        again, _ = env.reset(options={"task_id": 36})  # the spreadsheet
        screen = env.unwrapped.accessible_screen()
    finally:
        env.close()
    assert 'application "mousepad"' in observation["text"] and 'menu "File"' in observation["text"], observation["text"]
    assert 'application "gnumeric"' in again["text"], again["text"]
    assert screen["window"] == "gnumeric: book.gnumeric - Gnumeric", screen["window"]
    save = next(node for node in screen["nodes"] if node["role"] == "push button" and node["name"] == "Save")
    assert save["reachable"] and save["icon"] and len(save["box"]) == 4
    assert not processes_with_token(token)


def _node(parent: int, role: str, name: str = "", box=None, **fields) -> dict:
    return {"parent": parent, "role": role, "name": name, "box": box, "depth": 0, **fields}


def test_reachable_nodes_lie_in_the_top_layer_uncovered_and_in_view() -> None:
    """The accessibility tree's geometry (no X server): a dialog over its main window, an open menu's popup,
    a row scrolled out of its list's view, a node another one overlaps."""
    from agentgym.environments.desktop.onscreen import reachable, top_layer

    main = [
        _node(-1, "application", "gnumeric"),
        _node(0, "frame", "book - Gnumeric", [0, 0, 800, 600]),
        _node(1, "menu bar", "", [0, 0, 800, 25]),
        _node(2, "menu", "File", [0, 0, 40, 25]),
        _node(1, "push button", "Save", [80, 30, 40, 30]),
        _node(1, "scroll pane", "", [0, 100, 400, 100]),
        _node(5, "table cell", "shown", [0, 100, 400, 20]),
        _node(5, "table cell", "scrolled away", [0, 190, 400, 20]),
        _node(1, "label", "under", [500, 300, 50, 20]),
        _node(1, "label", "over", [520, 305, 50, 20]),
    ]
    assert top_layer(main) == (1, "gnumeric: book - Gnumeric")
    assert reachable(main, 800, 600) == [False, True, True, True, True, True, True, False, False, False]
    dialog = main + [
        _node(0, "dialog", "Print", [200, 200, 300, 200], active=True),
        _node(10, "push button", "Cancel", [300, 350, 80, 30]),
    ]
    assert top_layer(dialog) == (10, "gnumeric: Print")
    assert [index for index, reached in enumerate(reachable(dialog, 800, 600)) if reached] == [10, 11]
    menu = main + [_node(3, "menu item", "New", [0, 25, 200, 25]), _node(3, "menu item", "Open", [0, 50, 200, 25])]
    assert top_layer(menu) == (3, "gnumeric: book - Gnumeric > File")
    assert [index for index, reached in enumerate(reachable(menu, 800, 600)) if reached] == [10, 11]
    context = main + [_node(0, "menu", "", [300, 300, 150, 50]), _node(10, "menu item", "Copy", [300, 300, 150, 25])]
    assert top_layer(context) == (10, "gnumeric: menu")
    assert [index for index, reached in enumerate(reachable(context, 800, 600)) if reached] == [11]


ROOT_WITHOUT_SETGID = """
from agentgym.environments.desktop.session import DesktopError, DesktopSession, _privilege_hint
print(_privilege_hint())
session = DesktopSession()
try:
    assert session.windows() == ()  # the window list is readable as soon as the session is up
    home = session.new_home()
    try:
        session.launch(["xterm", "-e", "touch", "ran"], "xterm.XTerm")
        session._apps[0].wait(timeout=30)  # its window showed before its child failed
    except DesktopError as error:
        print(error)
    print("the command ran" if (home / "ran").exists() else "the command did not run")
finally:
    session.close()
"""


@needs_desktop
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv")
def test_xterm_cannot_run_commands_as_root_without_setgid_capability() -> None:
    """Root with capabilities dropped (a container run as root with --cap-drop ALL): xterm's child calls
    initgroups(), which fails, and exits before running the command; the session's error says why."""
    result = subprocess.run(
        ["setpriv", "--bounding-set=-setgid", "--inh-caps=-setgid", sys.executable, "-c", ROOT_WITHOUT_SETGID],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "CAP_SETGID" in result.stdout and "the command did not run" in result.stdout, result.stdout
