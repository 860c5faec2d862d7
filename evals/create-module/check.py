"""Success: finish, greet.py exists and greet works on names the task did not show."""

from gg.eval.checks import Check

check = Check.from_stdin()
check.ended_with("finish")
check.unchanged("README.md")
check.python_holds(
    "from greet import greet; assert greet('Zoë') == 'Hello, Zoë!'; assert greet('x y') == 'Hello, x y!'"
)
check.done()
