"""The no-search baseline: answer from the question alone, with the best guess that needs no search.

A comparison names its two candidates, so the baseline picks one of them at random (chance
1/2). Any other question gets the most frequent answer of its relation among the train
questions (the majority guess: "1" for a count, the most common birth year). A world
whose answers can be guessed would show here; the benchmark and the tests report it per kind
next to chance.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

from agentgym.environments.search.questions import Question


def answer_prior(train_questions: Iterable[Question]) -> dict[str, str]:
    """Relation -> its most frequent answer among ``train_questions`` (ties: the first seen)."""
    counts: dict[str, Counter[str]] = {}
    for question in train_questions:
        counts.setdefault(question.relation, Counter())[question.answer] += 1
    return {relation: counter.most_common(1)[0][0] for relation, counter in counts.items()}


def no_search_answer(question: Question, prior: dict[str, str], rng: random.Random) -> str:
    """The baseline's answer: a random named option, else the relation's majority answer."""
    if question.options:
        return rng.choice(question.options)
    return prior.get(question.relation, "unknown")


def chance(question: Question) -> float:
    """The success rate of guessing uniformly among the options a question names (0 where it names none)."""
    return 1 / len(question.options) if question.options else 0.0
