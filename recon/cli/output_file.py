"""Writing a command's output to a file the operator named, without surprises.

`--output PATH` used to open the path and write into it: a symlink planted there redirected the
report onto any file the operator could write, an interrupted write left half a report behind,
`-` made a file called `-`, and a missing folder ended in a traceback. Here the text goes to a
temporary file in the same folder, is flushed to disk, and is renamed over the target in one
step (readers see the old report or the new one, never half of one); a symlink at the target
is refused; `-` means standard output; every failure is one line naming the path.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Final

#: The conventional name for "standard output" in a path option.
STDOUT_PATH: Final = "-"

#: Mode of a written report: owner read and write only, like the store it is read from. A
#: report names accounts, references and amounts the provider sent; sharing it is the
#: operator's choice (chmod), never the default of a machine's other users.
REPORT_FILE_MODE: Final = 0o600


class OutputFileError(Exception):
    """The output file could not be written; the message is one line naming the path."""


def is_stdout(path: Path) -> bool:
    """True when the operator asked for standard output with `-`."""
    return str(path) == STDOUT_PATH


def write_atomically(path: Path, text: str) -> int:
    """Replace `path` with `text` (UTF-8) in one rename; the number of bytes written.

    Raises OutputFileError for a symlink at `path`, a missing folder, a folder in the way, or
    any other error of the file system.
    """
    data = text.encode("utf-8")
    if path.is_symlink():
        raise OutputFileError(
            f"{path} is a symbolic link: refusing to write through it (name the real file, or "
            "remove the link)"
        )
    folder = path.parent
    if not folder.is_dir():
        raise OutputFileError(f"cannot write {path}: the folder {folder} does not exist")
    if path.is_dir():
        raise OutputFileError(f"cannot write {path}: it is a folder")
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=folder)
    except OSError as exc:
        raise OutputFileError(f"cannot write in {folder}: {exc.strerror}") from None
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).chmod(REPORT_FILE_MODE & ~_umask())
        # rename replaces a symlink itself, never its target, even if one appeared meanwhile.
        Path(temporary).replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        raise OutputFileError(f"cannot write {path}: {exc.strerror}") from None
    return len(data)


def _umask() -> int:
    """The process's umask (reading it means setting it; it is put back at once)."""
    current = os.umask(0)
    os.umask(current)
    return current
