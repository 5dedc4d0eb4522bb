"""Wordle in text: guess a hidden 5-letter English word in at most 6 guesses.

Observation: the board, one line per guess so far with a mark after each letter
(``CRANE → C✗ R? A✗ N✗ E✓``); while the game goes on, a summary of what is known (the
letters fixed in place, the letters known to be in the word, the letters known not to be
in it) and the number of guesses left. The first observation also explains the marks and
the reply format.

Action: one 5-letter English word, as ``Action: crane`` or just ``crane`` (any case; a
trailing period or exclamation mark is ignored). A reply that is not 5 letters a-z, or a
word that is not in the allowed list (``guesses.txt``), is an invalid action: the
observation says why and it does not use up a guess. Repeating an earlier guess is
allowed and uses up a guess.

Feedback follows Wordle's rules: ✓ (green) the letter is in that place; ? (yellow) the
letter is in the word, in another place; ✗ (gray) the word holds no (more) copy of it.
Repeated letters count: greens are matched first, then yellows from left to right, each
taking one copy of the letter among the answer's letters not matched yet. With answer
``abbey`` the guess ``babes`` scores ``B? A? B✓ E✓ S✗``; with answer ``speed`` the guess
``erase`` scores ``E? R✗ A✗ S? E?``.

Reward and termination: the episode ends when the word is guessed (success, score 1, so
reward 1 on that step) or after the 6th guess (failure, score 0; the observation reveals
the word). All other steps have reward 0.

Tasks: one per answer word. The 2,200 answers are ordered by a BLAKE2b hash of the word
and task ids index that order, so the splits (train ids 0-1699, dev 1700-1899, test
1900-2199) are disjoint sets of words.

Data (headers of the files give the details): ``answers.txt`` holds common English words
taken from SCOWL's size-50 list (Debian's ``wamerican``) without proper nouns, plurals and
other inflected forms, names, abbreviations or offensive words, ranked by frequency with
``wordfreq``; ``guesses.txt`` holds the 11,406 words of 5 letters a-z of SCOWL's size-80
list (Debian's ``wamerican-huge``), a superset of the answers. ``SCOWL_COPYRIGHT.txt``
holds SCOWL's copyright notices and permissions. The lists are read once per process,
when the first env is made.

Oracle: keeps the answers consistent with all feedback so far and plays the answer word
that maximises the expected information of its feedback (the entropy of the partition of
the candidates by feedback) plus its chance of winning at once (1/candidates if it is a
candidate); on the last guess it plays a candidate. Feedback of every answer against every
answer is a numpy matrix computed once per process on the oracle's first use. From the
start it solves every answer within 6 guesses (3.48 on average).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources

import numpy as np

from agentgym.contract.core import InvalidAction, TextEnv
from agentgym.environments.wordle import SPLITS

WORD_LENGTH = 5
MAX_GUESSES = 6
GRAY, YELLOW, GREEN = 0, 1, 2
MARKS = ("✗", "?", "✓")  # indexed by GRAY, YELLOW, GREEN
#: A feedback as one number: the marks are its base-3 digits, the first letter's lowest.
PLACE_VALUES = tuple(3**i for i in range(WORD_LENGTH))
PATTERNS = 3**WORD_LENGTH

Feedback = tuple[int, ...]


@dataclass(frozen=True)
class WordLists:
    """The shipped word lists."""

    answers: tuple[str, ...]  # in task-id order
    guesses: tuple[str, ...]  # sorted; contains every answer
    allowed: frozenset[str]  # the same words as ``guesses``, for lookup


def _read_words(name: str) -> list[str]:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line and not line.startswith("#")]


@cache
def word_lists() -> WordLists:
    """The word lists, read once per process; answers in task-id order."""
    answers = sorted(
        _read_words("answers.txt"), key=lambda word: hashlib.blake2b(word.encode(), digest_size=8).digest()
    )
    if len(answers) != SPLITS.total:
        raise RuntimeError(f"answers.txt holds {len(answers)} words but SPLITS counts {SPLITS.total} tasks")
    guesses = tuple(_read_words("guesses.txt"))
    return WordLists(tuple(answers), guesses, frozenset(guesses))


def feedback(guess: str, answer: str) -> Feedback:
    """The mark (``GRAY``, ``YELLOW`` or ``GREEN``) of each letter of ``guess``."""
    marks = [GREEN if g == a else GRAY for g, a in zip(guess, answer)]
    unmatched = [a for a, mark in zip(answer, marks) if mark != GREEN]
    for i, letter in enumerate(guess):
        if marks[i] == GRAY and letter in unmatched:
            marks[i] = YELLOW
            unmatched.remove(letter)
    return tuple(marks)


def feedback_code(marks: Feedback) -> int:
    """A feedback as one number in ``range(PATTERNS)`` (see ``PLACE_VALUES``)."""
    return sum(mark * value for mark, value in zip(marks, PLACE_VALUES))


def letter_array(words: Iterable[str]) -> np.ndarray:
    """The words' letters as a (words, 5) uint8 array."""
    return np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8).reshape(-1, WORD_LENGTH)


def feedback_codes(guesses: np.ndarray, answers: np.ndarray) -> np.ndarray:
    """Feedback codes of every guess (rows) against every answer (columns), as uint8.

    Inputs come from :func:`letter_array`. The rule of :func:`feedback`, vectorised: a
    letter that is not green is yellow iff the answer holds more non-green copies of it
    than the guess holds non-green copies of it further left.
    """
    g, a = guesses[:, None, :], answers[None, :, :]
    green = g == a
    unmatched = ~green
    codes = np.zeros(green.shape[:2], dtype=np.uint8)
    for i in range(WORD_LENGTH):
        available = sum((g[..., i] == a[..., j]) & unmatched[..., j] for j in range(WORD_LENGTH))
        used = sum((g[..., i] == g[..., k]) & unmatched[..., k] for k in range(i))
        yellow = unmatched[..., i] & (used < available)
        codes += (GREEN * green[..., i] + YELLOW * yellow).astype(np.uint8) * PLACE_VALUES[i]
    return codes


@cache
def _answer_letters() -> np.ndarray:
    return letter_array(word_lists().answers)


@cache
def _pattern_matrix() -> np.ndarray:
    """Feedback codes of every answer as a guess (rows) against every answer (columns)."""
    letters = _answer_letters()
    chunk = 64  # rows per block: bounds the temporaries and keeps them in cache
    return np.concatenate(
        [feedback_codes(letters[start : start + chunk], letters) for start in range(0, len(letters), chunk)]
    )


def candidate_answers(history: Sequence[tuple[str, Feedback]]) -> np.ndarray:
    """Indices (into ``word_lists().answers``) of the answers consistent with ``history``."""
    candidates = np.arange(len(word_lists().answers))
    for guess, marks in history:
        codes = feedback_codes(letter_array([guess]), _answer_letters()[candidates])[0]
        candidates = candidates[codes == feedback_code(marks)]
    return candidates


@lru_cache(maxsize=4096)
def _best_guess(candidates: bytes, guesses_left: int) -> str:
    """The oracle's guess for the candidate indices (uint16 bytes); see the module docstring."""
    candidate_ids = np.frombuffer(candidates, dtype=np.uint16).astype(np.intp)
    matrix = _pattern_matrix()
    pool = candidate_ids if guesses_left <= 1 else np.arange(len(matrix))
    # One histogram of feedback codes per guess in the pool, in a single bincount.
    codes = matrix[np.ix_(pool, candidate_ids)] + PATTERNS * np.arange(len(pool))[:, None]
    counts = np.bincount(codes.ravel(), minlength=PATTERNS * len(pool)).reshape(len(pool), PATTERNS)
    total = len(candidate_ids)
    # Entropy of a partition with cell sizes c: log2(total) - sum(c * log2(c)) / total.
    score = np.log2(total) - (counts * np.log2(np.maximum(counts, 1))).sum(axis=1) / total
    score[np.isin(pool, candidate_ids)] += 1 / total
    return word_lists().answers[pool[int(np.argmax(score))]]


def _format(guess: str, marks: Feedback) -> str:
    return f"{guess.upper()} → " + " ".join(letter.upper() + MARKS[mark] for letter, mark in zip(guess, marks))


class WordleEnv(TextEnv):
    """Wordle with text observations; see the module docstring for the rules."""

    # Pure-Python and fast: runners may call it on their event loop.
    metadata = {**TextEnv.metadata, "inline_safe": True}
    splits = SPLITS

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__(render_mode)
        self.words = word_lists()
        self.answer = ""
        self.history: list[tuple[str, Feedback]] = []

    @property
    def action_syntax(self) -> str:
        return (
            "Reply with one 5-letter English word, e.g. 'Action: crane' (or just 'crane'). "
            "A word that is not in the game's word list is rejected and does not use up a guess."
        )

    def _generate(self, task_id: int) -> str:
        self.answer = self.words.answers[task_id]
        self.history = []
        return (
            f"Guess the hidden {WORD_LENGTH}-letter English word in at most {MAX_GUESSES} guesses. "
            "After each guess every letter gets a mark: ✓ right letter in the right place; "
            "? the letter is in the word but in another place; "
            "✗ the word has no (more) copies of that letter."
        )

    def _describe(self) -> str:
        if not self.history:
            return f"No guesses yet; {MAX_GUESSES} guesses left."
        lines = [f"Guesses ({len(self.history)} of {MAX_GUESSES}):"]
        lines += [f"{number}. {_format(guess, marks)}" for number, (guess, marks) in enumerate(self.history, 1)]
        if self.success:
            lines.append(f"Solved in {len(self.history)} guesses.")
        elif self.terminated:
            lines.append(f"No guesses left. The word was {self.answer.upper()}.")
        else:
            left = MAX_GUESSES - len(self.history)
            lines.append(self._known())
            lines.append(f"{left} guess{'es' if left > 1 else ''} left.")
        return "\n".join(lines)

    def _known(self) -> str:
        """What the feedback so far says about the letters, in one line."""
        pattern = ["_"] * WORD_LENGTH
        guessed: set[str] = set()
        present: set[str] = set()
        for guess, marks in self.history:
            for position, (letter, mark) in enumerate(zip(guess, marks)):
                guessed.add(letter)
                if mark == GREEN:
                    pattern[position] = letter.upper()
                if mark != GRAY:
                    present.add(letter)
        return (
            f"Known: {' '.join(pattern)}; in the word: {_letters(present)}; "
            f"not in the word: {_letters(guessed - present)}."
        )

    def _execute(self, command: str) -> str:
        guess = command.lower()
        if len(guess) != WORD_LENGTH or not (guess.isascii() and guess.isalpha()):
            raise InvalidAction(f"a guess is one word of exactly {WORD_LENGTH} letters a-z.")
        if guess not in self.words.allowed:
            raise InvalidAction(f"{guess.upper()} is not in the word list; try another word.")
        marks = feedback(guess, self.answer)
        self.history.append((guess, marks))
        if guess == self.answer:
            self.terminated = self.success = True
            self.score = 1.0
        elif len(self.history) == MAX_GUESSES:
            self.terminated = True
        return f"Guess {len(self.history)}: {_format(guess, marks)}"

    def random_action(self, rng: random.Random) -> str:
        """A word drawn uniformly from the allowed guesses."""
        return rng.choice(self.words.guesses)

    def oracle_action(self) -> str:
        candidates = candidate_answers(self.history)
        return _best_guess(candidates.astype(np.uint16).tobytes(), MAX_GUESSES - len(self.history))


def _letters(letters: set[str]) -> str:
    return " ".join(sorted(letter.upper() for letter in letters)) or "none"
