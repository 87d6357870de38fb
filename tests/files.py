"""Files the tests write: config files whose change a reload must notice."""

from __future__ import annotations

import os
from pathlib import Path


def touch_later(path: Path, seconds: int = 10) -> None:
    """Move the mtime forward so a reload never depends on the clock's resolution."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + seconds * 1_000_000_000))
