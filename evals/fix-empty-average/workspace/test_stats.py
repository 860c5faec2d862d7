import unittest

from stats import mean, spread


class StatsTest(unittest.TestCase):
    def test_mean(self) -> None:
        self.assertEqual(mean([1.0, 2.0, 3.0]), 2.0)

    def test_mean_of_nothing(self) -> None:
        self.assertEqual(mean([]), 0.0)

    def test_spread(self) -> None:
        self.assertEqual(spread([4.0, 1.0, 9.0]), 8.0)


if __name__ == "__main__":
    unittest.main()
