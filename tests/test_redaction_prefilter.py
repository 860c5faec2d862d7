"""The redaction prefilter never lets a secret through (adversarial review of issue 11's RE2 pass).

:class:`gg.text.Redactor` skips the value replacement and the shape scan for text its
prefilters find nothing in (one RE2 search for ASCII text, substring tests for other
text). The invariant, for every text and every set of secrets: the result is "each
value replaced, longest first, then the full :data:`gg.text._SHAPE` scan", as if no
prefilter existed. These tests attack it where the prefilters' engines differ from
Python's ``re``: escaping, case folding, RE2's memory budget, shared compiled objects.
"""

from __future__ import annotations

import random
import re
import string
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gg.text import _SHAPE, _SHAPE_HINTS_ANY_CASE, REDACTED, Redactor, _shape_replacement


def _reference(text: str, values: tuple[str, ...]) -> str:
    """What the redactor must give: every value, longest first, then every shape."""
    for value in values:
        text = text.replace(value, REDACTED)
    return _SHAPE.sub(_shape_replacement, text)


def _ignorecase_twins() -> dict[str, list[str]]:
    """Every non-ASCII character ``re``'s IGNORECASE takes for an ASCII letter, by letter."""
    everything = "".join(map(chr, range(0x80, 0x110000)))
    return {letter: re.findall(f"(?i:{letter})", everything) for letter in string.ascii_lowercase}


def test_a_hint_spelled_with_a_unicode_case_twin_is_still_scanned() -> None:
    """``re`` matches ``(?i:s)`` on U+017F, ``(?i:i)`` on U+0130/U+0131, ``(?i:k)`` on the
    Kelvin sign: a key name spelled with them is one the full scan redacts, so the non-ASCII
    prefilter (``str.lower`` substring tests) must not skip it."""
    twins = _ignorecase_twins()
    assert twins["s"] and twins["k"] and twins["i"]  # the class under test exists
    redactor = Redactor(())
    checked = 0
    for hint in _SHAPE_HINTS_ANY_CASE:
        for at, letter in enumerate(hint):
            for twin in twins.get(letter, []):
                name = hint[:at] + twin + hint[at + 1 :]
                for text in (f"{name}={'Ab1/' * 10}", f'"{name}": "Bearer {"Zz9" * 8}" ü'):
                    assert redactor(text) == _SHAPE.sub(_shape_replacement, text), text
                    checked += 1
    assert checked > 20


_ASCII_VALUE = st.text(alphabet=st.characters(max_codepoint=127), min_size=8, max_size=14)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_ASCII_VALUE, min_size=1, max_size=4),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=20),
    st.randoms(),
)
def test_ascii_values_of_any_character_are_found_by_the_re2_scan(
    secrets: list[str], filler: str, rng: random.Random
) -> None:
    """Every ASCII character (NUL, ``\\``, ``$``, ``{``, newlines, DEL, RE2's own syntax) in
    a value: escaped for RE2 the way Python's ``re`` reads it, so a value in ASCII text is
    never missed, whole, overlapping another, or beside one."""
    redactor = Redactor(secrets)
    values = tuple(redactor.values)
    parts = [filler]
    for value in values:
        parts.insert(rng.randint(0, len(parts)), value)
    text = "".join(parts)
    assert text.isascii()
    assert redactor(text) == _reference(text, values)
    for value in values:
        assert value not in redactor(text)


def test_secrets_past_re2s_memory_budget_are_still_redacted() -> None:
    """Values too large for one RE2 program (about 1 MB of them: a certificate bundle or a
    JSON credential file in a ``*_KEY`` variable) fall back to the substring tests: a
    redactor is still made, and still replaces them."""
    rng = random.Random(5)
    for count, size in [(1, 1_100_000), (40, 30_000)]:
        secrets = ["".join(rng.choices(string.ascii_letters, k=size)) for _ in range(count)]
        redactor = Redactor(secrets)
        text = f"start {secrets[-1]} middle {secrets[0]} end"
        assert redactor(text) == f"start {REDACTED} middle {REDACTED} end"
        assert redactor("nothing secret here") == "nothing secret here"


def test_the_values_cannot_change_under_the_scan() -> None:
    """The RE2 scan is made from the values at construction: they are read-only (a tuple,
    no setter), so no caller can add one that the scan would never look for."""
    redactor = Redactor(["first-secret-1"])
    assert isinstance(redactor.values, tuple)
    with pytest.raises(AttributeError):
        redactor.values = ("second-secret-2",)  # type: ignore[misc]
    assert redactor("has first-secret-1") == "has " + REDACTED


def test_one_redactor_shared_by_threads_redacts_each_text_alike() -> None:
    """The compiled scans are shared (module-level, cached per set of values): threads
    redacting at once all get the single-threaded answer."""
    secrets = ["thread-secret-value-1", "other\\secret$value{2}"]
    redactor = Redactor(secrets)
    rng = random.Random(3)
    alphabet = string.ascii_letters + " :=/\"'\\"
    texts = [
        "".join(rng.choices(alphabet, k=60)) + rng.choice([*redactor.values, "ghp_" + "a1" * 18])
        for _ in range(200)
    ]
    expected = [_reference(t, tuple(redactor.values)) for t in texts]
    wrong: list[str] = []

    def work() -> None:
        for _ in range(20):
            wrong.extend(t for t, e in zip(texts, expected, strict=True) if redactor(t) != e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
