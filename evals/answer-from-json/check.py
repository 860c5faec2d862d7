"""Success: finish whose summary names 7443 (and no other port); nothing changed."""

from gg.eval.checks import Check

check = Check.from_stdin()
check.ended_with("finish")
check.unchanged()
check.summary_has_number(7443, not_=(8000, 9100))
check.done()
