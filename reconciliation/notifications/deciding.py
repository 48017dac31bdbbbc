"""What a delivery becomes: the one decision, for the live inbox and for the rebuild alike.

The live inbox decides a claimed batch (reconciliation.notifications.processing); the rebuild
decides the whole inbox again, a chunk at a time (reconciliation.rebuild.notifications), to
prove the live store. Two implementations could only prove they were kept in step, so both
call this module: the same reading of a body, the same reasons, the same order.

A body is read with the configured `PayloadReader` (`read_body`; the provider's payload shape
is "not shown" in its spec, so the reader tries every configured shape). Then, set-wise over a
batch in delivery row order (`Decision.decide`), each delivery is either:

- set aside (quarantined, its bytes untouched) with its reason and what settles it: reading
  raised (MemoryError and RecursionError included: one body's failure must not fail its
  batch and every retry of it); no shape reads it (marked with its shape problem's
  fingerprint, gathered for the `delivery_not_understood` alert); a text no database can
  store; its delivery id already produced a notification from another row's body (two stories
  under one id are for a person to judge, not to add up);
- or processed, with its event type and what the caller keeps of the notification (the
  notification itself, or, for the rebuild's COPY, its columns as text).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple, Protocol, TypeAlias

from foundation import excerpt
from reconciliation.notifications.inbox import BODY_CONFLICT_NEXT_STEP
from reconciliation.notifications.shape_alerts import ShapeProblem, shape_problem_fingerprint
from upstream import DeliveryNotification, DeliveryNotUnderstood, PayloadReader

#: How every reason to set a delivery aside is written: why, then what settles it.
KEPT: Final = "{reason}. The body is kept unchanged; {next_step}."
#: What settles a delivery set aside for its own body's sake.
FIX_AND_REPLAY: Final = "fix the cause and replay the delivery"
#: Why a delivery whose reading raised is set aside: the exception's type and an excerpt.
READ_FAILED: Final = "reading the body failed: {kind} ({said})"
#: Why a delivery whose text no database can store is set aside (`unstorable_text` names it).
UNSTORABLE: Final = "its {field} holds a lone surrogate (an unpaired \\u escape)"
#: Why a second body under a delivery id that already produced a notification is set aside.
SECOND_STORY: Final = "delivery id {delivery_id!r} was already processed with a different body"

#: The notification's text fields a body supplies, checked by `unstorable_text`.
_TEXT_FIELDS: Final = (
    "body_id",
    "event_type",
    "account_number",
    "currency",
    "claimed_status",
    "narration",
)


def unstorable_text(d: DeliveryNotification) -> str | None:
    """The first text field no database can store (a lone surrogate, which JSON's `\\ud800`
    escape can spell), or None. Written, it failed the whole batch's statement, every retry and
    every re-send: one such body held back every delivery batched with it."""
    for name in _TEXT_FIELDS:
        value = getattr(d, name)
        if value is None or value.isascii():
            continue
        try:
            value.encode()
        except UnicodeEncodeError:
            return name
    return None


@dataclass(frozen=True, slots=True)
class Unusable:
    """A body that makes no notification though it may be JSON a shape reads: reading raised,
    or its text is one no database can store (`unstorable_text`). Says why."""

    reason: str


#: A body as read: (event type, what the caller keeps) when it can become a notification,
#: else why not. Small and plain, so the rebuild's reading processes can send it back.
Read: TypeAlias = "tuple[str, Any] | DeliveryNotUnderstood | Unusable"
#: What a caller keeps of a readable body's notification (a module-level function: the
#: rebuild hands it to its reading processes).
Transcribe: TypeAlias = "Callable[[DeliveryNotification], Any]"


def whole(note: DeliveryNotification) -> DeliveryNotification:
    """Keep the notification itself."""
    return note


def read_body(
    reader: PayloadReader, transcribe: Transcribe, body: bytes, headers: Mapping[str, str]
) -> Read:
    """One body read, never raising: what a notification of it keeps, or why there is none."""
    try:
        note = reader.read(body, headers)
    except Exception as exc:  # noqa: BLE001 - this delivery's failure, kept as its reason
        return Unusable(READ_FAILED.format(kind=type(exc).__name__, said=excerpt(str(exc))))
    if isinstance(note, DeliveryNotUnderstood):
        return note
    unstorable = unstorable_text(note)
    if unstorable is not None:
        return Unusable(UNSTORABLE.format(field=unstorable))
    return note.event_type, transcribe(note)


class Processed(NamedTuple):
    """The delivery becomes (or stays) a notification."""

    event_type: str
    #: What `Transcribe` kept of the notification.
    kept: Any
    #: The delivery already has its notification (a replay keeps it): nothing to write.
    noted: bool


class SetAside(NamedTuple):
    """The delivery is quarantined, its bytes untouched."""

    error: str
    #: The fingerprint of the gap no shape could read, for the `delivery_not_understood` alert.
    shape_problem: str | None = None


class DeliveryRow(Protocol):
    """A delivery row as the decision sees it."""

    @property
    def id(self) -> int: ...
    @property
    def delivery_id(self) -> str: ...


@dataclass(slots=True)
class Decision:
    """Deliveries decided in row order, a batch at a time, remembering across batches which
    delivery ids already produced a notification, and from which rows."""

    #: Delivery id -> the rows whose notification it has (the live inbox reads these from the
    #: store for the ids of its batch; the rebuild starts from none, in row order).
    told: dict[str, set[int]] = field(default_factory=dict)
    #: The delivery ids that can have a second body (None: any): only these are remembered,
    #: so the rebuild of a large inbox keeps a few ids, not every one.
    repeated: Container[str] | None = None
    #: The gaps no shape could read, with their rows: one `delivery_not_understood` alert each.
    problems: dict[str, ShapeProblem] = field(default_factory=dict)

    def decide(
        self, rows: Sequence[DeliveryRow], reads: Sequence[Read]
    ) -> list[Processed | SetAside]:
        """What each row, read as `reads` says, becomes; in the rows' order."""
        return [self._one(row, read) for row, read in zip(rows, reads, strict=True)]

    def _one(self, row: DeliveryRow, read: Read) -> Processed | SetAside:
        if isinstance(read, Unusable):
            return SetAside(KEPT.format(reason=read.reason, next_step=FIX_AND_REPLAY))
        if isinstance(read, DeliveryNotUnderstood):
            fingerprint = shape_problem_fingerprint(read)
            self.problems.setdefault(fingerprint, ShapeProblem(read)).row_ids.append(row.id)
            return SetAside(
                KEPT.format(reason=read.describe(), next_step=FIX_AND_REPLAY), fingerprint
            )
        told = self.told.get(row.delivery_id)
        if told and told != {row.id}:
            reason = SECOND_STORY.format(delivery_id=row.delivery_id)
            return SetAside(KEPT.format(reason=reason, next_step=BODY_CONFLICT_NEXT_STEP))
        if not told and (self.repeated is None or row.delivery_id in self.repeated):
            self.told[row.delivery_id] = {row.id}
        return Processed(read[0], read[1], bool(told))
