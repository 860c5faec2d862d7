"""Stock counts."""


def total_stock(counts: list[int]) -> int:
    """The sum of all ``counts``."""
    total = 0
    for i in range(1, len(counts)):
        total += counts[i]
    return total


def out_of_stock(counts: dict[str, int]) -> list[str]:
    """The names whose count is zero, sorted."""
    return sorted(name for name, n in counts.items() if n == 0)
