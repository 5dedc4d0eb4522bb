"""Wordle-v0's feedback rules, word lists, splits and oracle."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest

from agentgym.environments.wordle import SPLITS
from agentgym.environments.wordle.env import (
    GRAY,
    GREEN,
    MAX_GUESSES,
    YELLOW,
    WordleEnv,
    candidate_answers,
    feedback,
    feedback_code,
    feedback_codes,
    letter_array,
    word_lists,
)

G, Y, X = GREEN, YELLOW, GRAY

# (answer, guess, marks), worked out by hand: greens first, then yellows left to right,
# one per copy of the letter among the answer's letters that are not green.
HAND_CASES = [
    ("abbey", "babes", (Y, Y, G, G, X)),  # each B of the guess takes one B of the answer
    ("speed", "erase", (Y, X, X, Y, Y)),  # two E in both, none in place: both yellow
    ("abbey", "bobby", (Y, X, G, X, G)),  # the green B and the first B use up both copies
    ("crane", "eerie", (X, X, Y, X, G)),  # the only E is green: the earlier E are gray
    ("lever", "eerie", (Y, G, Y, X, X)),  # two E in the answer: one green, one yellow, then none
    ("lever", "level", (G, G, G, G, X)),
    ("crane", "crane", (G, G, G, G, G)),
    ("skill", "lolls", (Y, X, X, G, Y)),  # L green at 4, one more L yellow, the third gray
    ("sassy", "asses", (Y, Y, G, X, Y)),  # three S in the answer: green, then two yellows
]


def make(task_id: int = 0) -> WordleEnv:
    env = WordleEnv()
    env.reset(options={"task_id": task_id})
    return env


def wrong_words(answer: str, count: int) -> list[str]:
    return [word for word in ("crane", "pious", "dumpy", "fjord", "light", "bench", "wacky") if word != answer][:count]


@pytest.mark.parametrize(("answer", "guess", "marks"), HAND_CASES)
def test_feedback_on_hand_cases(answer: str, guess: str, marks: tuple[int, ...]) -> None:
    assert feedback(guess, answer) == marks
    codes = feedback_codes(letter_array([guess]), letter_array([answer]))
    assert codes.shape == (1, 1) and codes[0, 0] == feedback_code(marks)


def test_vectorised_feedback_matches_the_rule() -> None:
    words = word_lists()
    rng = random.Random(0)
    guesses = rng.sample(words.guesses, 300) + [guess for _, guess, _ in HAND_CASES]
    answers = rng.sample(words.answers, 200) + [answer for answer, _, _ in HAND_CASES]
    codes = feedback_codes(letter_array(guesses), letter_array(answers))
    expected = [[feedback_code(feedback(guess, answer)) for answer in answers] for guess in guesses]
    assert codes.dtype == np.uint8 and (codes == np.array(expected)).all()


def test_feedback_is_shown_per_letter() -> None:
    env = make()
    env.answer = "abbey"
    observation, reward, terminated, _, info = env.step("Action: BABES")
    assert "BABES → B? A? B✓ E✓ S✗" in observation
    assert "Known: _ _ B E _; in the word: A B E; not in the word: S." in observation
    assert "5 guesses left." in observation
    assert reward == 0.0 and not terminated and not info["invalid_action"]


def test_word_lists_are_clean() -> None:
    words = word_lists()
    for word_list in (words.answers, words.guesses):
        assert all(re.fullmatch("[a-z]{5}", word) for word in word_list)
        assert len(set(word_list)) == len(word_list)
    assert len(words.answers) == 2_200 and len(words.guesses) == 11_406
    assert set(words.answers) <= words.allowed == set(words.guesses)
    assert list(words.guesses) == sorted(words.guesses)


def test_splits_are_disjoint_words_with_declared_counts() -> None:
    env = WordleEnv()
    split_words: dict[str, set[str]] = {}
    for split, count in SPLITS.counts().items():
        answers = []
        for task_id in SPLITS.ids(split):
            env.reset(options={"task_id": task_id})
            assert env.split == split
            answers.append(env.answer)
        split_words[split] = set(answers)
        assert len(answers) == len(split_words[split]) == count
    assert not split_words["train"] & split_words["dev"]
    assert not split_words["train"] & split_words["test"]
    assert not split_words["dev"] & split_words["test"]
    assert set().union(*split_words.values()) == set(word_lists().answers)


def test_task_ids_map_to_fixed_words() -> None:
    # Task identity is part of Wordle-v0: a task id always plays the same word.
    pinned = {0: "angel", 1_700: "rebut", 1_900: "gross", 2_199: "allay"}
    assert {task_id: make(task_id).answer for task_id in pinned} == pinned


def test_invalid_guesses_do_not_use_up_guesses() -> None:
    env = make()
    for reply, reason in [
        ("xyz", "exactly 5 letters"),
        ("cranes", "exactly 5 letters"),
        ("cr4ne", "exactly 5 letters"),
        ("crane slate", "exactly 5 letters"),
        ("", "exactly 5 letters"),
        ("abcde", "not in the word list"),
        ("Action: qzxjv", "not in the word list"),
    ]:
        observation, reward, terminated, _, info = env.step(reply)
        assert info["invalid_action"] and reward == 0.0 and not terminated
        assert reason in observation and "6 guesses left" in observation
    assert env.history == []
    observation, _, _, _, info = env.step("Action: Crane.")
    assert not info["invalid_action"] and env.history[0][0] == "crane" and "5 guesses left" in observation


def test_correct_guess_wins() -> None:
    env = make(5)
    env.step(wrong_words(env.answer, 1)[0])
    observation, reward, terminated, _, info = env.step(env.answer.upper())
    assert terminated and reward == 1.0 and info["success"] and info["score"] == 1.0
    assert "Solved in 2 guesses." in observation


def test_six_wrong_guesses_fail_and_reveal_the_answer() -> None:
    env = make(1_950)
    guesses = wrong_words(env.answer, MAX_GUESSES)
    for number, guess in enumerate(guesses, 1):
        observation, reward, terminated, _, info = env.step(guess)
        assert reward == 0.0 and terminated == (number == MAX_GUESSES)
        assert env.answer.upper() not in observation or number == MAX_GUESSES
    assert not info["success"] and info["score"] == 0.0
    assert f"No guesses left. The word was {env.answer.upper()}." in observation
    observation, reward, terminated, _, info = env.step(env.answer)
    assert terminated and reward == 0.0 and "episode is over" in observation


def test_episodes_are_deterministic() -> None:
    def play(task_id: int) -> list:
        env = gym.make("Wordle-v0")
        trajectory = [env.reset(seed=1, options={"task_id": task_id})]
        for reply in ["slate", "nonsense", "Action: pious", "fjord"]:
            trajectory.append(env.step(reply))
        return trajectory

    assert play(1_901) == play(1_901)
    assert play(1_901)[0][0] == play(1_902)[0][0]  # the first observation does not give the word away
    assert play(1_901)[1:] != play(1_902)[1:]


def test_oracle_solves_every_test_answer_within_six_guesses() -> None:
    env = gym.make("Wordle-v0")
    guesses_needed: Counter[int] = Counter()
    for task_id in SPLITS.ids("test"):
        env.reset(options={"task_id": task_id})
        total_reward, terminated, info = 0.0, False, {}
        while not terminated:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
            total_reward += reward
            assert not truncated and not info["invalid_action"]
        assert info["success"] and total_reward == info["score"] == 1.0
        guesses_needed[len(env.unwrapped.history)] += 1
    print(f"Wordle oracle, guesses per test answer: {dict(sorted(guesses_needed.items()))}")
    assert sum(guesses_needed.values()) == SPLITS.test >= 200
    assert max(guesses_needed) <= MAX_GUESSES


def test_oracle_plays_from_any_state() -> None:
    # After arbitrary guesses the oracle still plays consistent, allowed words; on the last
    # guess it plays a word that every feedback so far allows.
    for task_id in range(1_700, 1_740):
        env = make(task_id)
        for guess in wrong_words(env.answer, MAX_GUESSES - 1):
            env.step(guess)
        candidates = {env.words.answers[index] for index in candidate_answers(env.history)}
        assert env.answer in candidates
        last = env.oracle_action()
        assert last in candidates
        assert all(feedback(guess, last) == marks for guess, marks in env.history)


def test_random_action_is_an_allowed_word() -> None:
    env = make()
    rng = random.Random(0)
    assert all(env.random_action(rng) in env.words.allowed for _ in range(50))


def test_word_lists_load_only_when_an_env_is_made() -> None:
    code = "import sys, agentgym; assert 'agentgym.environments.wordle.env' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
