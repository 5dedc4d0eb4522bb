"""agentgym.utils.check_text_env passes a small well-behaved env and names the rule each broken one breaks.

(Every registered id is checked in tests/test_contract.py.)
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from agentgym.contract.core import InvalidAction, TaskSplits, TextEnv
from agentgym.contract.registry import unregister
from agentgym.utils import RULES, ContractViolation, check_text_env


class CounterEnv(TextEnv):
    """Count up to the task's target with ``inc``; the score is the fraction counted."""

    splits = TaskSplits(train=20, dev=5, test=5)

    @property
    def action_syntax(self) -> str:
        return "Reply with `Action: inc` to add one."

    def _generate(self, task_id: int) -> str:
        self.target = 2 + task_id % 5
        self.count = 0
        return f"Count to {self.target}."

    def _describe(self) -> str:
        return f"Count: {self.count}"

    def _execute(self, command: str) -> str:
        if command != "inc":
            raise InvalidAction("the only action is inc")
        self.count += 1
        self.score = self.count / self.target
        self.success = self.terminated = self.count == self.target
        return "Counted."

    def oracle_action(self) -> str:
        return "inc"

    def available_actions(self) -> list[str]:
        return ["inc"]


class RaisesOnControlCharacters(CounterEnv):
    """Broken: a NUL byte in the command crashes it instead of being an invalid action."""

    def _execute(self, command: str) -> str:
        if "\x00" in command:
            raise ValueError("embedded null character")
        return super()._execute(command)


_clicks = itertools.count()


class NonDeterministic(CounterEnv):
    """Broken: its feedback depends on a process-wide counter, not on the task and the replies."""

    def _execute(self, command: str) -> str:
        return f"{super()._execute(command)} (call {next(_clicks)})"


class MissesTaskId(CounterEnv):
    """Broken: info has no task_id."""

    def _info(self, command: str, invalid: bool) -> dict[str, Any]:
        info = super()._info(command, invalid)
        del info["task_id"]
        return info


class RewardIsNotScoreDelta(CounterEnv):
    """Broken: pays the score on every step instead of its change."""

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        observation, _, terminated, truncated, info = super().step(action)
        return observation, float(info["score"]), terminated, truncated, info


@pytest.fixture
def make() -> Iterator[Any]:
    """``make(cls)``: register ``cls`` under a test id (20 steps) and ``gym.make`` it; cleaned up after."""
    made: list[tuple[str, gym.Env]] = []

    def make_env(cls: type[TextEnv]) -> gym.Env:
        env_id = f"TestContract{cls.__name__}-v0"
        gym.register(id=env_id, entry_point=cls, max_episode_steps=20)
        made.append((env_id, gym.make(env_id)))
        return made[-1][1]

    yield make_env
    for env_id, env in made:
        env.close()
        gym.registry.pop(env_id, None)


def test_a_well_behaved_env_passes_every_rule(make: Any) -> None:
    report = check_text_env(make(CounterEnv))
    assert set(report.checked) == set(RULES)
    assert report.skipped == {} and report.episodes > 20 and report.steps > 100


@pytest.mark.parametrize(
    ("cls", "rule", "detail"),
    [
        (RaisesOnControlCharacters, "never-raises", "raised ValueError('embedded null character')"),
        (NonDeterministic, "determinism", "with seed 0 and the same replies differs at step"),
        (MissesTaskId, "info-keys", "info misses ['task_id']"),
        (RewardIsNotScoreDelta, "score", "but the score went from"),
    ],
)
def test_a_broken_env_fails_naming_the_rule(make: Any, cls: type[TextEnv], rule: str, detail: str) -> None:
    with pytest.raises(ContractViolation) as caught:
        check_text_env(make(cls))
    assert caught.value.rule == rule
    message = str(caught.value)
    assert message.startswith(f"TestContract{cls.__name__}-v0 breaks the contract rule {rule!r} ({RULES[rule]})")
    assert detail in message


def test_an_unregistered_env_is_checked_without_truncation() -> None:
    """Constructed directly (no gym.make), there is no registered limit to check; the report says so."""
    report = check_text_env(CounterEnv(), gymnasium_check=False)
    assert report.skipped == {"gymnasium": "gymnasium_check=False", "truncation": "no max_episode_steps registered"}
    assert "oracle" in report.checked and "determinism" in report.checked


def test_an_oracle_that_fails_is_reported(make: Any) -> None:
    class Stuck(CounterEnv):
        def oracle_action(self) -> str:
            return "wait"

    with pytest.raises(ContractViolation, match="'oracle'.*ended task"):
        check_text_env(make(Stuck), determinism_tasks=0)


def test_the_adding_a_family_page_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/adding-a-family.md: its env, registration and check, run as the files it names."""
    page = (Path(__file__).parents[1] / "docs" / "adding-a-family.md").read_text()
    env_code, register_code, check_code = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    package = tmp_path / "guess_number"
    package.mkdir()
    (package / "env.py").write_text(env_code)
    (package / "__init__.py").write_text(register_code)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        namespace: dict[str, Any] = {}
        exec(compile(check_code, "adding-a-family.md", "exec"), namespace)
        assert set(namespace["report"].checked) == set(RULES) and namespace["report"].skipped == {}
    finally:
        unregister("GuessNumber-v0")
        for name in ("guess_number", "guess_number.env"):
            sys.modules.pop(name, None)
