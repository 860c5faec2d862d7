import unittest

from textutil import shout, slugify


class TextTest(unittest.TestCase):
    def test_shout(self) -> None:
        self.assertEqual(shout("hi"), "HI!")

    def test_slugify_lowercases_and_joins_words_with_dashes(self) -> None:
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_slugify_collapses_spaces(self) -> None:
        self.assertEqual(slugify("  Many   spaces here "), "many-spaces-here")


if __name__ == "__main__":
    unittest.main()
