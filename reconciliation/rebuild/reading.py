"""Delivery bodies read again, a chunk at a time, in this process or in worker processes.

Reading a body is `reconciliation.notifications.deciding.read_body`, as the live inbox reads it
(this module parses nothing itself). It is the one CPU-bound part of a rebuild that does not
depend on the order of the inbox, so over a large inbox the chunks go to worker processes while
this process streams the next rows and decides and writes what came back, in delivery order
(`reconciliation.rebuild.notifications`: second stories and new ids depend on the order).

What comes back per body is small and cheap to send between processes: the event type and the
notification's columns already as a line fragment of PostgreSQL's `COPY ... FROM STDIN` text
format (`copy_fields`), or, for the few bodies that make no notification, why not. A
notification object with its UUIDs would cost more to pickle and unpickle than reading the body
did; stores written through SQLAlchemy (SQLite) keep the notification itself
(`deciding.whole`), in this process.

Workers are started with `spawn` (a fresh interpreter, no inherited database connections, no
locks held by another thread at fork time) and receive the reader once, at start.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Final, TypeAlias
from uuid import UUID

from reconciliation.notifications.deciding import Read, Transcribe, read_body
from reconciliation.notifications.inbox import stored_delivery_id
from reconciliation.notifications.processing_writes import NOTIFICATION_RECORD
from upstream import DeliveryNotification, PayloadReader

#: Notification columns a body decides (all but the delivery's row id and its delivery id), in
#: the order `copy_fields` writes them.
BODY_COLUMNS: Final = tuple(NOTIFICATION_RECORD)[2:]
#: Deliveries read from which on a rebuild uses worker processes (`workers_for`): below it,
#: starting interpreters costs more than it saves.
PARALLEL_FROM: Final = 50_000
#: Chunks handed out ahead of the one being written, per worker: enough that a worker never
#: waits for this process, few enough that memory stays a few chunks of bodies.
AHEAD_PER_WORKER: Final = 2
#: COPY's text format: the value that means NULL, and the characters that must be escaped.
COPY_NULL: Final = "\\N"
_COPY_ESCAPES: Final = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def copy_text(value: str | None) -> str:
    """Text in COPY's text format: NULL as `\\N`, its backslashes, tabs and line ends escaped."""
    return COPY_NULL if value is None else value.translate(_COPY_ESCAPES)


def _copy_ref(value: UUID | None) -> str:
    # 32 hex digits: a form PostgreSQL's uuid input takes, cheaper to make than the dashed one.
    return COPY_NULL if value is None else value.hex


def _copy_number(value: int | None) -> str:
    return COPY_NULL if value is None else str(value)


def copy_fields(note: DeliveryNotification) -> str:
    """The notification's columns (`BODY_COLUMNS`) as tab-separated COPY text."""
    body_id = stored_delivery_id(note.body_id) if note.body_id is not None else None
    return "\t".join(
        (
            copy_text(body_id),
            copy_text(note.shape),
            copy_text(note.event_type),
            _copy_ref(note.transfer_ref),
            _copy_ref(note.receipt_ref),
            _copy_ref(note.account_ref),
            _copy_ref(note.endpoint_ref),
            _copy_ref(note.holding_ref),
            copy_text(note.account_number),
            _copy_number(note.amount_minor),
            copy_text(note.currency),
            copy_text(note.claimed_status),
            copy_text(note.narration),
            note.occurred_at.isoformat(),
        )
    )


#: A chunk of bodies to read: (body, headers as stored) per delivery.
Chunk: TypeAlias = Sequence[tuple[bytes, "Mapping[str, str] | str | None"]]


def read_chunk(reader: PayloadReader, transcribe: Transcribe, chunk: Chunk) -> list[Read]:
    """Every body of a chunk, in order. Headers come as a mapping, as JSON text (parsed here
    with `json.loads`, as the database driver parses the column), or None (none stored)."""
    return [read_body(reader, transcribe, body, _headers(headers)) for body, headers in chunk]


def _headers(stored: Mapping[str, str] | str | None) -> Mapping[str, str]:
    """The headers as the reader takes them: none stored (SQL NULL or JSON null) is none."""
    found = json.loads(stored) if isinstance(stored, str) else stored
    return found or {}


#: The reader and transcription a worker process was started with (`_start`).
_worker: tuple[PayloadReader, Transcribe] | None = None


def _start(reader: PayloadReader, transcribe: Transcribe) -> None:
    global _worker  # noqa: PLW0603 - a worker process's one piece of state, set once at start
    _worker = (reader, transcribe)


def _read_in_worker(chunk: Chunk) -> list[Read]:
    assert _worker is not None, "worker started without a reader"
    return read_chunk(*_worker, chunk)


def workers_for(deliveries: int, dialect: str, requested: int | None = None) -> int:
    """Worker processes for an inbox this large: `requested` if given; else, on PostgreSQL, one
    per CPU for a large inbox (`PARALLEL_FROM`) and none (read in this process) for a small one.

    None on SQLite unless requested: there a notification goes back to this process as an
    object for SQLAlchemy to insert, and pickling its UUIDs costs more than reading the body.
    """
    if requested is not None:
        return max(0, requested)
    if dialect != "postgresql" or deliveries < PARALLEL_FROM:
        return 0
    return max(1, os.cpu_count() or 1)


class ChunkReader:
    """Hands chunks out and gives their reads back in the order handed out.

    With `workers` 0 every chunk is read at once in this process; otherwise by a pool of that
    many processes, and `ahead` says how many chunks may be out before the oldest is awaited.
    Use as a context manager: the pool is shut down on the way out, whatever happened.
    """

    def __init__(self, reader: PayloadReader, transcribe: Transcribe, workers: int) -> None:
        self._reader, self._transcribe = reader, transcribe
        self._pool: ProcessPoolExecutor | None = None
        if workers > 0:
            self._pool = ProcessPoolExecutor(
                max_workers=workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start,
                initargs=(reader, transcribe),
            )
        self.ahead = workers * AHEAD_PER_WORKER

    def __enter__(self) -> ChunkReader:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, chunk: Chunk) -> Callable[[], list[Read]]:
        """Start reading a chunk; call what comes back for its reads (waiting if need be)."""
        if self._pool is None:
            done = read_chunk(self._reader, self._transcribe, chunk)
            return lambda: done
        future: Future[list[Read]] = self._pool.submit(_read_in_worker, chunk)
        return future.result
