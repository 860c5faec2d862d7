"""Success: finish, the tests pass, the test file is untouched, mean still averages."""

from gg.eval.checks import Check

check = Check.from_stdin()
check.ended_with("finish")
check.unchanged("test_stats.py")
check.tests_pass()
check.python_holds("from stats import mean; assert mean([]) == 0.0; assert mean([2.0, 4.0, 9.0]) == 5.0")
check.done()
