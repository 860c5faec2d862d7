"""Success: finish naming Wierzbicki (not the 3.1 manager); nothing changed."""

from gg.eval.checks import Check

check = Check.from_stdin()
check.ended_with("finish")
check.unchanged()
check.summary_has("Wierzbicki", not_=("Natarajan",))
check.done()
