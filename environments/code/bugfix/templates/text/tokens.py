"""Splitting text into tokens and sentences."""

from ._chars import split_words

STOPWORDS = ("a", "an", "and", "are", "in", "is", "it", "of", "on", "or", "the", "to", "was")


def tokenize(text):
    """The lower-case words of ``text``."""
    return [word.lower() for word in split_words(text)]


def remove_stopwords(tokens):
    """The tokens that are not stop words."""
    return [token for token in tokens if token not in STOPWORDS]


def ngrams(tokens, n):
    """The runs of ``n`` consecutive tokens, as tuples."""
    if n < 1:
        raise ValueError("n must be at least 1")
    return [tuple(tokens[start : start + n]) for start in range(len(tokens) - n + 1)]


def sentences(text):
    """The sentences of ``text``: split after '.', '!' or '?', stripped, empty ones dropped."""
    found, start = [], 0
    for index, char in enumerate(text):
        if char in ".!?":
            sentence = text[start : index + 1].strip()
            if len(sentence) > 1:
                found.append(sentence)
            start = index + 1
    rest = text[start:].strip()
    if rest:
        found.append(rest)
    return found
