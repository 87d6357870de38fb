"""Kept bytes: the earlier bytes of files, in a content-addressed folder on the machine that holds the files.

Why a folder beside the store and not a LanceDB table: a
file's bytes are read back whole and by one key, never searched; a folder writes and reads them at
the disk's speed, a deleted object frees its space at once (LanceDB frees a blob only when an optimize
rewrites its fragment, and every optimize would copy the blobs again), and the bytes stay on the machine
whose files they are, even when the store is on object storage: what a rewind restores is that
machine's notebook directory. The journal's rows, in the store, say which digest each file had.

Every object is named by the SHA-256 of its bytes, written to a temporary file beside it and renamed
into place: two kernels keeping the same bytes write the same object, a reader never sees half of
one, a branch shares objects by naming their digests. A sweep removes what no session's rows name,
once it is older than ``SWEEP_GRACE``: another kernel may have written an object and not yet the row
that names it (keeping bytes that are already there touches the object, so it counts as new).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from monad_notebook.config_schema import monad_home

CHUNK = 1 << 20
SWEEP_GRACE = 3600.0  # seconds an object no row names is left alone (a row may be on its way)


class TooLarge(Exception):
    """The file is larger than what may be kept of one file."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


@dataclass(frozen=True)
class Kept:
    """Bytes kept: their digest, their size, and whether this keep wrote them (else they were there already)."""

    digest: str
    size: int
    new: bool


def kept_folder(store_uri: str, configured: str | None) -> Path:
    """``rewind.keptDir``, else ``<store>.kept`` beside a store on this machine, else ``$MONAD_HOME/kept``."""
    if configured:
        return Path(configured).expanduser()
    if "://" not in store_uri and Path(store_uri).is_absolute():
        store = Path(store_uri)
        return store.with_name(store.name + ".kept")
    return monad_home() / "kept"


class KeptBytes:
    """The objects under ``folder``: kept, read back, written to a file, swept."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, digest: str) -> Path:
        return self.folder / "objects" / digest[:2] / digest

    def has(self, digest: str) -> bool:
        return bool(digest) and self.path(digest).is_file()

    def keep(self, source: str | os.PathLike[str], max_bytes: int) -> Kept:
        """Copy ``source``'s bytes in, hashing them as they are read; raises ``TooLarge`` beyond ``max_bytes``
        (checked before reading a byte) and ``OSError`` when the file cannot be read."""
        size = os.stat(source).st_size
        if size > max_bytes:
            raise TooLarge(size)
        staging = self.folder / "staging"
        staging.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        fd, temp = tempfile.mkstemp(dir=staging)
        try:
            with open(source, "rb") as reader, os.fdopen(fd, "wb") as writer:
                while block := reader.read(CHUNK):
                    digest.update(block)
                    writer.write(block)
                size = writer.tell()
            return self._settle(temp, digest.hexdigest(), size)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)

    def keep_text(self, text: str) -> str:
        """Keep a short text (a real path the store must not hold); its digest."""
        data = text.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()
        if not self.has(digest):
            staging = self.folder / "staging"
            staging.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=staging)
            with os.fdopen(fd, "wb") as writer:
                writer.write(data)
            try:
                self._settle(temp, digest, len(data))
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)
        return digest

    def read_text(self, digest: str) -> str | None:
        try:
            return self.path(digest).read_bytes().decode("utf-8", "surrogatepass")
        except OSError:
            return None

    def _settle(self, temp: str, digest: str, size: int) -> Kept:
        """Rename the staged copy into place, unless the same bytes are there already (then touched: in use)."""
        target = self.path(digest)
        if target.is_file():
            with contextlib.suppress(OSError):
                os.utime(target)
            return Kept(digest, size, new=False)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(temp, target)
        return Kept(digest, size, new=True)

    def write_to(self, digest: str, target: Path) -> None:
        """Put the object's bytes at ``target``, whole or not at all (a temporary file beside it, renamed over)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".restoring")
        try:
            with open(self.path(digest), "rb") as reader, os.fdopen(fd, "wb") as writer:
                while block := reader.read(CHUNK):
                    writer.write(block)
            os.replace(temp, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise

    def sweep(self, referenced: set[str], only: Iterable[str] | None = None, grace: float = SWEEP_GRACE) -> int:
        """Remove the objects no row names (of ``only``, when given) untouched for ``grace`` seconds; bytes freed."""
        root = self.folder / "objects"
        candidates = (self.path(d) for d in only) if only is not None else root.glob("*/*")
        freed, now = 0, time.time()
        for path in candidates:
            try:
                stat = path.stat()
                if path.name in referenced or now - stat.st_mtime < grace:
                    continue
                path.unlink()
                freed += stat.st_size
            except OSError:
                continue
        return freed
