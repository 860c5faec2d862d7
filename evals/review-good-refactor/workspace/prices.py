"""Prices with tax."""

TAX_RATE = 0.2


def _with_tax(amount: float) -> float:
    return round(amount * (1 + TAX_RATE), 2)


def item_price(net: float) -> float:
    """One item's price with tax, rounded to cents."""
    return _with_tax(net)


def basket_price(nets: list[float]) -> float:
    """A basket's price with tax, rounded to cents."""
    return _with_tax(sum(nets))
