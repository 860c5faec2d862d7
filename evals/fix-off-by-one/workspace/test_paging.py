import unittest

from paging import page, page_count


class PagingTest(unittest.TestCase):
    def test_first_page(self) -> None:
        self.assertEqual(page(["a", "b", "c", "d", "e"], 1, 2), ["a", "b"])

    def test_last_page(self) -> None:
        self.assertEqual(page(["a", "b", "c", "d", "e"], 3, 2), ["e"])

    def test_page_count(self) -> None:
        self.assertEqual(page_count(5, 2), 3)


if __name__ == "__main__":
    unittest.main()
