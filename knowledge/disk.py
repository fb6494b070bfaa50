"""Telling a full disk from a broken index.

Chroma words a write that failed for want of space in many ways ("Error in compaction",
SQLite's "database or disk is full", Rust's "No space left on device (os error 28)"); a store
that took each for a corrupt index would delete the index and then fail to rebuild it on the
same full disk. `disk_full` looks at the error's words and at the space actually left.
"""

from __future__ import annotations

import errno
import re
import shutil
from pathlib import Path

# Less free space than this where the index lives counts as full: SQLite and Chroma's
# segment files need room for a write-ahead log and a compacted copy.
MIN_FREE_BYTES = 16_000_000
_FULL_WORDS = re.compile(
    r"no space left|disk is full|disk full|os error 28|ENOSPC|quota exceeded", re.IGNORECASE
)


def free_bytes(path: Path) -> int | None:
    """Free space on the file system holding `path` (its nearest existing folder); None if unknown."""
    for folder in (path, *path.parents):
        if folder.exists():
            try:
                return shutil.disk_usage(folder).free
            except OSError:
                return None
    return None


def disk_full(exc: BaseException, path: Path) -> bool:
    """True when `exc` (or what caused it) says the disk is full, or when there is no room left at `path`."""
    seen: BaseException | None = exc
    for _ in range(10):  # the cause chain, not followed forever
        if seen is None:
            break
        if isinstance(seen, OSError) and seen.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if _FULL_WORDS.search(str(seen)):
            return True
        seen = seen.__cause__ or seen.__context__
    free = free_bytes(path)
    return free is not None and free < MIN_FREE_BYTES


def describe_free(path: Path) -> str:
    free = free_bytes(path)
    return "no free space" if free is None or free < 1_000_000 else f"{free / 1e6:,.0f} MB free"
