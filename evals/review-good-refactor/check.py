"""Success: the reviewer approved (the change is correct) and edited nothing."""

from gg.eval.checks import Check

check = Check.from_stdin()
check.unchanged()
check.ended_with("approve")
check.done()
