"""URL slugs."""

from ._chars import split_words


def slugify(text, separator="-", max_length=None):
    """Lower-case words joined by ``separator``, cut at a word boundary to ``max_length``."""
    slug = ""
    for word in split_words(text):
        candidate = word.lower() if not slug else slug + separator + word.lower()
        if max_length is not None and len(candidate) > max_length:
            break
        slug = candidate
    return slug


def unique_slug(text, taken):
    """``slugify(text)``, with -2, -3, ... appended until it is not in ``taken``."""
    base = slugify(text)
    if base not in taken:
        return base
    for number in range(2, len(taken) + 3):
        candidate = f"{base}-{number}"
        if candidate not in taken:
            return candidate
    raise RuntimeError("unreachable: there are more numbers than taken slugs")
