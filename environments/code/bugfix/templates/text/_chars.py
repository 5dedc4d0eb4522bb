"""Character classes and word splitting shared by the text functions."""


def is_word_char(char):
    """Letters and digits make up words."""
    return char.isalnum()


def split_words(text):
    """The runs of letters and digits in ``text``, in order."""
    words, current = [], []
    for char in text:
        if is_word_char(char):
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def split_camel(word):
    """``parseHTTPResponse`` -> ``['parse', 'HTTP', 'Response']``."""
    parts, start = [], 0
    for index in range(1, len(word)):
        previous, char = word[index - 1], word[index]
        following = word[index + 1] if index + 1 < len(word) else ""
        if char.isupper() and (previous.islower() or previous.isdigit() or following.islower()):
            if index > start:
                parts.append(word[start:index])
                start = index
    parts.append(word[start:])
    return parts
