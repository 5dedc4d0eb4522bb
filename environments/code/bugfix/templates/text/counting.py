"""Counting words and letters."""

from .tokens import remove_stopwords, tokenize


def word_counts(text, skip_stopwords=False):
    """How often each word occurs, in the order of first appearance."""
    tokens = tokenize(text)
    if skip_stopwords:
        tokens = remove_stopwords(tokens)
    counts = {}
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    return counts


def top_words(text, n, skip_stopwords=True):
    """The ``n`` most frequent words with their counts; ties in alphabetical order."""
    counts = word_counts(text, skip_stopwords)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:n]


def letter_frequencies(text):
    """How often each letter occurs, ignoring case, in alphabetical order."""
    counts = {}
    for char in text.lower():
        if "a" <= char <= "z":
            counts[char] = counts.get(char, 0) + 1
    return dict(sorted(counts.items()))


def average_word_length(text):
    """The mean length of the words (0.0 without words)."""
    tokens = tokenize(text)
    if not tokens:
        return 0.0
    return sum(len(token) for token in tokens) / len(tokens)


def lexical_diversity(text):
    """Distinct words divided by all words (0.0 without words)."""
    tokens = tokenize(text)
    if not tokens:
        return 0.0
    return len(set(tokens)) / len(tokens)
