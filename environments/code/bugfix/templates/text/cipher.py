"""Small text transforms."""

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def _shift_char(char, shift):
    """``char`` moved ``shift`` places along the alphabet, keeping its case; others unchanged."""
    lower = char.lower()
    if lower not in ALPHABET:
        return char
    moved = ALPHABET[(ALPHABET.index(lower) + shift) % 26]
    return moved.upper() if char.isupper() else moved


def caesar(text, shift):
    """Every letter shifted by ``shift`` places."""
    return "".join(_shift_char(char, shift) for char in text)


def rot13(text):
    return caesar(text, 13)


def is_palindrome(text):
    """Whether the letters and digits read the same backwards, ignoring case."""
    kept = [char.lower() for char in text if char.isalnum()]
    return kept == kept[::-1]


def vowel_count(text):
    return sum(1 for char in text.lower() if char in "aeiou")


def run_length(text):
    """``aaabcc`` -> ``a3b1c2``."""
    if not text:
        return ""
    parts, current, count = [], text[0], 1
    for char in text[1:]:
        if char == current:
            count += 1
        else:
            parts.append(f"{current}{count}")
            current, count = char, 1
    parts.append(f"{current}{count}")
    return "".join(parts)
