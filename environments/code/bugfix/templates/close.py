def close(actual, expected, tolerance=1e-9):
    """Whether actual equals expected up to float rounding (also inside lists and tuples)."""
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, type(expected))
            and len(actual) == len(expected)
            and all(close(a, e, tolerance) for a, e in zip(actual, expected))
        )
    if isinstance(expected, float):
        return isinstance(actual, (int, float)) and abs(actual - expected) <= tolerance * max(1.0, abs(expected))
    return actual == expected
