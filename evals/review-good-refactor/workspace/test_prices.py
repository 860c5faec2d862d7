import unittest

from prices import basket_price, item_price


class PricesTest(unittest.TestCase):
    def test_item(self) -> None:
        self.assertEqual(item_price(10.0), 12.0)

    def test_basket(self) -> None:
        self.assertEqual(basket_price([10.0, 5.0]), 18.0)


if __name__ == "__main__":
    unittest.main()
