"""Orders and their totals."""


def compute_total(prices: list[float], discount: float = 0.0) -> float:
    """The sum of ``prices`` less ``discount`` (a fraction, 0.1 = 10%), rounded to cents."""
    return round(sum(prices) * (1.0 - discount), 2)
