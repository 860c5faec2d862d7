"""``python -m gg``: the same as the ``gg`` command."""

from gg.cli import main

main()
