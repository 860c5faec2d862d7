"""Display names."""


def initials(full_name: str) -> str:
    """The upper-case initials of a name: ``"ada lovelace"`` -> ``"AL"``; ``""`` -> ``""``."""
    return "".join(part[0].upper() for part in full_name.split())
