"""ALFWorld-v0: the ALFWorld text games (Shridhar et al., 2021) on the ``alfworld`` package's engine.

Each task is one game file of ALFWorld's release, ``json_2.1.1/<split>/<task>/<trial>/game.tw-pddl``
(with its ``traj_data.json``), played by TextWorld's PDDL engine with ALFWorld's own
wrappers: ``AlfredDemangler`` turns ids into names like ``apple 1`` and ALFWorld's
handcoded expert (``HandCodedTWAgent``, the DAgger expert of the paper) is the oracle.

* **Data.** From ``data_dir=`` or ``$ALFWORLD_DATA`` (else alfworld's default download folder
  ``~/.cache/alfworld``): the folder that holds ``json_2.1.1/`` or that folder itself. Without
  it, making the env raises :class:`ALFWorldDataMissing`, which says what to fetch elsewhere.
* **Tasks.** Train = ``train``, dev = ``valid_seen``, test = ``valid_unseen`` (ALFWorld's
  in- and out-of-distribution evaluation sets). The games kept are those ALFWorld's loader
  keeps (the six task types; no movable receptacles or sliced objects; ``solvable``), sorted
  by path; task id ``N`` of a split is its ``N``-th game. The registered counts are the full
  release's (3553 / 140 / 134); a folder with fewer games (a partial copy, or the tiny set of
  :mod:`.tiny`) plays the ones it has, and a task id beyond them raises a ``ValueError``.
* **Observation.** ALFWorld's feedback, then the room overview ALFWorld shows at the start
  (the receptacles there are). The first observation holds the task ("Your task is to: ...").
* **Actions.** ALFWorld's admissible commands (``info["available_actions"]``): ``go to X``,
  ``open X``, ``close X``, ``take X from Y``, ``move X to Y`` (``put X in/on Y`` is accepted
  too), ``heat/cool/clean X with Y``, ``use X``, ``examine X``, ``look``, ``inventory``.
  Anything else is an invalid action; the game does not change.
* **Reward.** 1 when the goal holds (``won``): the episode ends with success. ALFWorld gives
  no partial credit, so the score is 0 or 1.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from agentgym.contract.core import SPLIT_NAMES, InvalidAction, Split, TaskSplits, TextEnv, quote
from agentgym.environments.alfworld import SPLITS

DATA_ENV_VAR = "ALFWORLD_DATA"
GAMES_FOLDER = "json_2.1.1"
#: alfworld-download's default destination.
DEFAULT_DATA_DIR = Path("~/.cache/alfworld").expanduser()
SPLIT_FOLDERS: dict[Split, str] = {"train": "train", "dev": "valid_seen", "test": "valid_unseen"}
TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)
_PUT = re.compile(r"^put (.+?) (?:in|on|in/on|into|onto) (.+)$")


#: TextWorld's PDDL engine parses games and commands with module-level TatSu parsers, which are
#: not thread-safe: envs on several threads (the eval runner) take turns at loading, stepping and
#: planning (the steps are CPU-bound under the GIL anyway).
_ENGINE_LOCK = threading.Lock()


class ALFWorldDataMissing(FileNotFoundError):
    """The ALFWorld game files are not where ``data_dir=`` / ``$ALFWORLD_DATA`` point."""


def data_missing_message(searched: list[Path]) -> str:
    where = ", ".join(str(path) for path in searched) or "nowhere (no data_dir= and no $ALFWORLD_DATA)"
    return (
        f"ALFWorld-v0 needs ALFWorld's game files, and they cannot be downloaded from this machine. "
        f"Searched: {where}.\n"
        "On a machine with internet: `pip install alfworld==0.4.2 && alfworld-download --data-dir DIR` "
        f"(it fetches json_2.1.1 with a game.tw-pddl and a traj_data.json per game). Copy DIR (it holds "
        f"{GAMES_FOLDER}/train, {GAMES_FOLDER}/valid_seen and {GAMES_FOLDER}/valid_unseen) here, then "
        f"`export {DATA_ENV_VAR}=DIR` or gym.make('ALFWorld-v0', data_dir='DIR').\n"
        "For ALFWorld-style household tasks that need no data, use Household-v0."
    )


def find_games_folder(data_dir: str | os.PathLike[str] | None = None) -> Path:
    """The ``json_2.1.1`` folder: from ``data_dir``, else ``$ALFWORLD_DATA``, else ``~/.cache/alfworld``.

    ``data_dir`` may be the folder holding ``json_2.1.1`` or that folder itself. Raises
    :class:`ALFWorldDataMissing` (with what to fetch and where to point) when none has games.
    """
    if data_dir is not None:
        candidates = [Path(data_dir)]
    elif os.environ.get(DATA_ENV_VAR):
        candidates = [Path(os.environ[DATA_ENV_VAR])]
    else:
        candidates = [DEFAULT_DATA_DIR]
    searched = []
    for candidate in candidates:
        candidate = candidate.expanduser()
        for folder in (candidate / GAMES_FOLDER, candidate):
            searched.append(folder)
            if any((folder / name).is_dir() for name in SPLIT_FOLDERS.values()):
                return folder.resolve()
    raise ALFWorldDataMissing(data_missing_message(searched))


def _is_solvable(game_file: Path) -> bool:
    raw = game_file.read_bytes()
    if b'"solvable": true' in raw:
        return True
    if b'"solvable": false' in raw:
        return False
    return bool(json.loads(raw).get("solvable", False))


@functools.lru_cache(maxsize=16)
def collect_games(split_folder: Path) -> tuple[Path, ...]:
    """The game files of one split folder that ALFWorld's loader keeps, sorted by path.

    As ``AlfredTWEnv.collect_game_files``: a game is a folder with ``traj_data.json`` and
    ``game.tw-pddl``, of one of the six task types (the task folder's name starts with it),
    not a movable-receptacle or sliced-object game, and marked solvable.
    """
    games = []
    for traj_data in sorted(split_folder.glob("*/*/traj_data.json")):
        folder = traj_data.parent
        task_folder = folder.parent.name
        if "movable" in str(folder) or "Sliced" in str(folder):
            continue
        if task_folder.split("-", 1)[0] not in TASK_TYPES:
            continue
        game_file = folder / "game.tw-pddl"
        if game_file.is_file() and _is_solvable(game_file):
            games.append(game_file)
    return tuple(games)


class ALFWorldEnv(TextEnv):
    """ALFWorld's text games (see the module docstring)."""

    splits: TaskSplits = SPLITS
    #: The games are the user's files, not made by code we version (see agentgym.evaluation.fingerprint).
    fingerprint_exempt = "its tasks are the user's ALFWorld game files ($ALFWORLD_DATA), not generated by agentgym"

    def __init__(self, data_dir: str | os.PathLike[str] | None = None, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        self.games_folder = find_games_folder(data_dir)
        self.games: dict[Split, tuple[Path, ...]] = {
            split: collect_games(self.games_folder / SPLIT_FOLDERS[split]) for split in SPLIT_NAMES
        }
        if not any(self.games.values()):
            raise ALFWorldDataMissing(
                f"{self.games_folder} holds no playable ALFWorld games.\n" + data_missing_message([self.games_folder])
            )
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler
        from textworld.envs.pddl import PddlEnv

        self._engine = PddlEnv(textworld.EnvInfos(won=True, admissible_commands=True))
        self._game = AlfredDemangler(self._engine)
        self._state: Any = None
        self._room = ""
        self._plan: list[str] | None = None

    @property
    def action_syntax(self) -> str:
        return (
            "Act with one command per turn, e.g. 'Action: go to countertop 1'. Commands: go to [receptacle], "
            "open [receptacle], close [receptacle], take [object] from [receptacle], move [object] to [receptacle], "
            "heat [object] with [microwave], cool [object] with [fridge], clean [object] with [sinkbasin], "
            "use [lamp], examine [thing], look, inventory. info['available_actions'] lists the valid ones."
        )

    def game_file(self, task_id: int) -> Path:
        """The ``game.tw-pddl`` file of ``task_id``."""
        split = self.splits.split_of(task_id)
        index = task_id - self.splits.ids(split).start
        games = self.games[split]
        if index >= len(games):
            folder = self.games_folder / SPLIT_FOLDERS[split]
            raise ValueError(
                f"task {task_id} is {split} game #{index}, but {folder} holds only {len(games)} playable games "
                f"(ALFWorld's full release has {getattr(self.splits, split)}); its ids are "
                f"{self.splits.ids(split).start}..{self.splits.ids(split).start + len(games) - 1}"
            )
        return games[index]

    def _choose_task(self, options: dict[str, Any]) -> int:
        """As :class:`TextEnv`, but a drawn task is one of the games the data folder holds."""
        if options.get("task_id") is not None or set(options) - {"task_id", "split"}:
            return super()._choose_task(options)
        split = options.get("split", "train")
        ids = self.splits.ids(split)[: len(self.games[split])]
        if not ids:
            raise ValueError(f"{self.games_folder / SPLIT_FOLDERS[split]} holds no playable {split} games")
        return ids[int(self.np_random.integers(len(ids)))]

    def _generate(self, task_id: int) -> str:
        game_file = self.game_file(task_id)
        with _ENGINE_LOCK:
            self._game.load(str(game_file))
            self._state = self._game.reset()
        intro = self._state.feedback
        self._room = intro.split("\n\n")[1].strip() if intro.count("\n\n") >= 2 else intro.strip()
        task = intro.rsplit("Your task is to:", 1)[-1].strip()
        self._plan = None
        return f"Your task is to: {task}"

    def _describe(self) -> str:
        return self._room

    def available_actions(self) -> list[str] | None:
        if self._state is None:
            return None
        return list(self._state["admissible_commands"])

    def _normalise(self, command: str) -> str:
        command = " ".join(command.lower().split())
        put = _PUT.match(command)
        if put and f"move {put[1]} to {put[2]}" in self._state["admissible_commands"]:
            return f"move {put[1]} to {put[2]}"
        return command

    def _execute(self, command: str) -> str:
        command = self._normalise(command)
        if not command:
            raise InvalidAction("the reply holds no command; " + self.action_syntax)
        if command not in self.available_actions():
            raise InvalidAction(
                f"{quote(command)} is not a valid command here (nothing happens); "
                "info['available_actions'] lists the valid ones, e.g. 'look' or 'inventory'"
            )
        with _ENGINE_LOCK:
            self._state, _, _ = self._game.step(command)
        self._plan = None
        if self._state["won"]:
            self.score, self.success, self.terminated = 1.0, True, True
        return self._state.feedback.strip()

    def oracle_action(self) -> str:
        """The first command of a plan to the goal from the current state.

        The plan comes from the engine's Fast Downward planner, as ALFWorld's expert of type
        ``planner`` (``policy_commands``); it is computed only when asked for.
        """
        if self._plan is None:
            # PddlEnv keeps its planner state private; ``replan`` is what its policy_commands info calls.
            with _ENGINE_LOCK:
                self._plan = self._engine._pddl_state.replan(self._engine._entity_infos)
        return self._plan[0] if self._plan else "look"

    def close(self) -> None:
        self._game.close()
        super().close()
