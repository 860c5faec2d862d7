"""A one-line report of an order."""

from shop import compute_total


def describe(prices: list[float]) -> str:
    """``"3 items, 6.00"`` for three items costing 6 in all."""
    return f"{len(prices)} items, {compute_total(prices):.2f}"
