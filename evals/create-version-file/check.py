"""Success: finish, VERSION holds exactly 2.4.1, the changelog untouched."""

from gg.eval.checks import Check

check = Check.from_stdin()
check.ended_with("finish")
check.unchanged("CHANGELOG.md")
check.file_is("VERSION", "2.4.1")
check.done()
