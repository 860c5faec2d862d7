"""Split a list of items into pages."""


def page(items: list[str], number: int, size: int) -> list[str]:
    """Return page ``number`` (1-based) of ``items``, ``size`` items per page."""
    start = number * size
    return items[start : start + size]


def page_count(total: int, size: int) -> int:
    """How many pages ``total`` items fill, ``size`` per page."""
    return (total + size - 1) // size
