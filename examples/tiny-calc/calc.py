"""A tiny calculator."""


def add(a: float, b: float) -> float:
    """Return a + b."""
    return a + b


def divide(a: float, b: float) -> float | None:
    """Return a / b, or None when b is zero."""
    return a / b
