"""Success: the reviewer requested changes (the change is broken) and edited nothing."""

from gg.eval.checks import Check

check = Check.from_stdin()
check.unchanged()
check.ended_with("request_changes")
check.done()
