"""Small statistics helpers."""


def mean(values: list[float]) -> float:
    """The arithmetic mean of ``values``; 0.0 for an empty list."""
    return sum(values) / len(values)


def spread(values: list[float]) -> float:
    """The largest value minus the smallest; 0.0 for an empty list."""
    if not values:
        return 0.0
    return max(values) - min(values)
