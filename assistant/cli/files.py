"""Why a file given on the command line could not be read, in words rather than errno or codec text."""

from __future__ import annotations

import errno


def read_failure(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text; save it as plain UTF-8 text"
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder, not a file"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        return "the path is too long"
    return "it cannot be read as a file"
