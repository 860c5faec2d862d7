"""Success: finish, the tests pass (and a hidden one), the test file is untouched."""

from gg.eval.checks import Check

check = Check.from_stdin()
check.ended_with("finish")
check.unchanged("test_paging.py")
check.tests_pass()
check.python_holds(
    "from paging import page; assert page(list('abcdefg'), 2, 3) == list('def'); "
    "assert page(list('abc'), 2, 3) == []"
)
check.done()
