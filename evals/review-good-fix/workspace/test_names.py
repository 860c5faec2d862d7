import unittest

from names import initials


class NamesTest(unittest.TestCase):
    def test_initials(self) -> None:
        self.assertEqual(initials("ada lovelace"), "AL")

    def test_extra_spaces(self) -> None:
        self.assertEqual(initials("  grace   hopper "), "GH")

    def test_empty(self) -> None:
        self.assertEqual(initials(""), "")


if __name__ == "__main__":
    unittest.main()
