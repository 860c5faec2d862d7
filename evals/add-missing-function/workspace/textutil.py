"""Text helpers."""


def shout(text: str) -> str:
    """``text`` in upper case with an exclamation mark."""
    return text.upper() + "!"
