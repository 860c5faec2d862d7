"""Success: finish, no compute_total left, order_total works from both modules."""

from gg.eval.checks import Check

check = Check.from_stdin()
check.ended_with("finish")
for name in ("shop.py", "report.py"):
    check.lacks(name, "compute_total")
    check.contains(name, "order_total")
check.python_holds(
    "from shop import order_total; from report import describe; "
    "assert order_total([10.0, 5.0], 0.2) == 12.0; assert describe([1.0, 2.0]) == '2 items, 3.00'"
)
check.done()
