"""Converting between naming conventions."""

from ._chars import split_camel, split_words

SMALL_WORDS = ("a", "an", "and", "as", "at", "but", "by", "for", "in", "of", "on", "or", "the", "to")


def _words(text):
    """The lower-case words of ``text``, with camel case split as well."""
    return [part.lower() for word in split_words(text) for part in split_camel(word)]


def to_snake(text):
    """``Parse HTTP response`` -> ``parse_http_response``."""
    return "_".join(_words(text))


def to_kebab(text):
    """``Parse HTTP response`` -> ``parse-http-response``."""
    return "-".join(_words(text))


def to_camel(text):
    """``parse http response`` -> ``parseHttpResponse``."""
    words = _words(text)
    if not words:
        return ""
    return words[0] + "".join(word.capitalize() for word in words[1:])


def to_pascal(text):
    """``parse http response`` -> ``ParseHttpResponse``."""
    return "".join(word.capitalize() for word in _words(text))


def title_case(text):
    """Each word capitalized, except small words that are neither first nor last."""
    words = text.split()
    result = []
    for index, word in enumerate(words):
        if 0 < index < len(words) - 1 and word.lower() in SMALL_WORDS:
            result.append(word.lower())
        else:
            result.append(word[:1].upper() + word[1:].lower())
    return " ".join(result)
