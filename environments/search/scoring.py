"""Answers scored as the papers score them: exact match and token F1 after SQuAD's normalisation.

:func:`normalize_answer` is the rule of the SQuAD v1.1 evaluation script, which Search-R1
(``verl/utils/reward_score/qa_em.py``), HotpotQA and FlashRAG use unchanged: lowercase,
remove punctuation, remove the articles *a*, *an*, *the* as words, collapse whitespace.
Exact match is 1 when the normalised prediction equals any normalised gold answer; token F1
is SQuAD's (over the normalised tokens, the best over the gold answers).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace (SQuAD's order)."""
    text = text.lower()
    text = "".join(character for character in text if character not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str | Sequence[str]) -> float:
    """1.0 if the normalised prediction equals a normalised gold answer, else 0.0."""
    answers = [gold] if isinstance(gold, str) else list(gold)
    normalised = normalize_answer(prediction)
    return float(any(normalize_answer(answer) == normalised for answer in answers))


def token_f1(prediction: str, gold: str | Sequence[str]) -> float:
    """SQuAD's token F1 between the normalised prediction and the best-matching gold answer."""
    answers = [gold] if isinstance(gold, str) else list(gold)
    predicted = normalize_answer(prediction).split()
    best = 0.0
    for answer in answers:
        expected = normalize_answer(answer).split()
        common = sum((Counter(predicted) & Counter(expected)).values())
        if common == 0:
            continue
        precision, recall = common / len(predicted), common / len(expected)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best
