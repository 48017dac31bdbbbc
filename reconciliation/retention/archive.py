"""What a prune removes, written first to compressed JSON lines that read back exactly.

One file per table per run (`<table>-<run>.jsonl.gz`), one JSON object per removed row, keyed
by column name. Values are written by column type so they read back to the same Python values:
bytes as base64 text, times as ISO 8601 with their offset, uuids as text, JSON columns as they
are, integers as integers (money stays exact).

Each batch is appended as its own gzip member (a file of concatenated members is one valid gzip
stream) and synced before the batch's transaction commits. When the commit fails, the member is
cut off again (`Archive.undo`), so the file holds exactly the rows that left the store.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from sqlalchemy import JSON, DateTime, LargeBinary, Table, Uuid

#: File name suffix of an archive file.
SUFFIX: Final = ".jsonl.gz"
#: Modes of an archive's folders and files: the owner's alone, like the store (0600) whose raw
#: delivery and outbound bodies they hold.
ARCHIVE_FOLDER_MODE: Final = 0o700
ARCHIVE_FILE_MODE: Final = 0o600


class ArchiveError(Exception):
    """An archive file cannot be written or read back; the message names the file."""


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def encode_row(row: Mapping[str, Any]) -> str:
    """One removed row as a JSON line."""
    return json.dumps({k: _plain(v) for k, v in row.items()}, sort_keys=True, ensure_ascii=False)


def decode_row(table: Table, line: str) -> dict[str, Any]:
    """A JSON line back to the values the store held, read by the table's column types."""
    raw = json.loads(line)
    row: dict[str, Any] = {}
    for name, value in raw.items():
        kind = table.c[name].type
        if value is None or isinstance(kind, JSON):
            row[name] = value
        elif isinstance(kind, LargeBinary):
            row[name] = base64.b64decode(value)
        elif isinstance(kind, Uuid):
            row[name] = uuid.UUID(value)
        elif isinstance(kind, DateTime) or isinstance(getattr(kind, "impl", None), DateTime):
            row[name] = datetime.fromisoformat(value)
        else:
            row[name] = value
    return row


def read_archive(path: Path, table: Table) -> Iterator[dict[str, Any]]:
    """Every row in an archive file, as the store held it."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as stream:
            for line in stream:
                if line.strip():
                    yield decode_row(table, line)
    except (OSError, EOFError, ValueError) as exc:
        raise ArchiveError(f"{path}: not a readable prune archive ({exc})") from exc


@dataclass(slots=True)
class Archive:
    """The files of one prune run in one folder, created when a table first loses a row."""

    folder: Path
    run: str
    files: dict[str, Path] = field(default_factory=dict)

    def path(self, table: str) -> Path:
        return self.folder / f"{table}-{self.run}{SUFFIX}"

    def mark(self) -> dict[str, int]:
        """The size of every file now, to cut back to if the batch does not commit."""
        return {t: p.stat().st_size for t, p in self.files.items()}

    def write(self, table: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append rows as one gzip member and sync it."""
        lines = [encode_row(r) for r in rows]
        if not lines:
            return
        target = self.path(table)
        try:
            _private_folders(self.folder)
            data = gzip.compress(("\n".join(lines) + "\n").encode("utf-8"))
            descriptor = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, ARCHIVE_FILE_MODE)
            with os.fdopen(descriptor, "ab") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
        except OSError as exc:
            raise ArchiveError(f"cannot write prune archive {target}: {exc}") from exc
        self.files[table] = target

    def undo(self, mark: dict[str, int]) -> None:
        """Cut every file back to `mark` (a batch whose transaction did not commit)."""
        for table, target in list(self.files.items()):
            size = mark.get(table, 0)
            with target.open("r+b") as stream:
                stream.truncate(size)
            if size == 0:
                target.unlink()
                del self.files[table]


def _private_folders(folder: Path) -> None:
    """`folder` and every missing folder above it, each created 0700 (`Path.mkdir` gives the
    parents it creates the default mode, whatever `mode` says)."""
    missing: list[Path] = []
    here = folder
    while not here.exists():
        missing.append(here)
        here = here.parent
    for path in reversed(missing):
        path.mkdir(mode=ARCHIVE_FOLDER_MODE, exist_ok=True)
