"""Exceptions: the unmatched queue by age, one item with why each counterpart is apart, and
the decisions a person makes there (match by hand, accept without a counterpart, unmatch)
through the same service as `recon match` / `recon accept` / `recon unmatch`."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get, post
from litestar.datastructures import FormMultiDict
from litestar.exceptions import NotFoundException, ValidationException
from litestar.params import FromPath, FromQuery
from litestar.response import Template
from sqlalchemy.orm import Session

import app.console.forms as form_fields
from app.console.rendering import Outcome, act, answered, back_field, page, policy, read
from app.console.session import console_guard
from app.path_ids import RowId
from reconciliation import ReconcilePolicy
from reconciliation.matching import CandidateError, Explanation, explain
from reconciliation.operator import (
    AGE_BUCKETS,
    COUNT_CAP,
    STREAMS,
    ActionRefusedError,
    OperatorService,
    QueueError,
    QueuePage,
    queue_page,
)
from reconciliation.operator import actions as operator_actions
from reconciliation.postings import HoldingIdentity, holding_identities
from reconciliation.store import utcnow

AnyRequest = Request[Any, Any, Any]


def _queue(
    session: Session, rules: ReconcilePolicy, stream: str, bucket: str | None, cursor: str | None
) -> tuple[QueuePage, dict[str, HoldingIdentity]]:
    """One page of the queue, and how people name the holdings it lists."""
    with answered(ValidationException, QueueError):
        found = queue_page(
            session,
            now=utcnow(),
            grace_seconds=rules.notification_grace_seconds,
            finality_seconds=rules.finality_deadline_seconds,
            stream=stream,
            bucket=bucket,
            cursor=cursor,
        )
    return found, holding_identities(session, [i.holding_ref for i in found.items if i.holding_ref])


def _explain(
    session: Session, kind: str, item_id: int, window: int
) -> tuple[Explanation, dict[str, HoldingIdentity]]:
    """The item and its counterparts, and how people name the item's holding."""
    with answered(NotFoundException, CandidateError):
        found = explain(session, kind, item_id, window_seconds=window)
    refs = [found.item.holding_ref] if found.item.holding_ref else []
    return found, holding_identities(session, refs)


def _match(acting: OperatorService, form: FormMultiDict) -> Outcome:
    """The anchor item and the counterparts ticked, matched together with the reason."""
    picked: dict[str, list[int]] = {k: form_fields.row_ids(form, k) for k in STREAMS}
    for kind in ("transfer", "notification"):
        if len(picked[kind]) > 1:
            raise ActionRefusedError(f"tick at most one {kind}: a match row names one of each")
    acting.perform(
        operator_actions.match,
        form_fields.text(form, "reason"),
        posting_ids=picked["posting"],
        transfer_id=picked["transfer"][0] if picked["transfer"] else None,
        notification_id=picked["notification"][0] if picked["notification"] else None,
    )
    return Outcome(back_field(form), "matched")


def _accept(acting: OperatorService, form: FormMultiDict) -> Outcome:
    """The page's own item, closed with no counterpart and the reason it needs none."""
    kind = str(form.get("kind") or "")
    item_id = form_fields.row_id(form, "item")
    if kind not in STREAMS or item_id is None:
        raise ActionRefusedError("the form names no item: reload the item's page")
    acting.perform(
        operator_actions.accept_without_counterpart, kind, item_id, form_fields.text(form, "reason")
    )
    return Outcome(back_field(form), "accepted")


def _unmatch(acting: OperatorService, form: FormMultiDict) -> Outcome:
    match_id = form_fields.row_id(form, "match")
    assert match_id is not None
    acting.perform(operator_actions.unmatch, match_id, form_fields.text(form, "reason"))
    return Outcome(back_field(form), "unmatched")


class ExceptionPages(Controller):
    path = "/exceptions"
    guards = [console_guard]  # noqa: RUF012 - Litestar's declared class attribute

    @get("/", sync_to_thread=True)
    def queue(
        self,
        request: AnyRequest,
        stream: FromQuery[str] = "posting",
        age: FromQuery[str | None] = None,
        cursor: FromQuery[str | None] = None,
    ) -> Template:
        """Counts by age bucket and stream; the oldest items of one stream, a page at a time."""
        found, holdings = read(request, _queue, policy(request), stream, age or None, cursor)
        return page(
            request,
            "exceptions.html",
            found=found,
            holdings=holdings,
            stream=stream,
            age=age,
            streams=STREAMS,
            buckets=AGE_BUCKETS,
            cap=COUNT_CAP,
        )

    @get("/{kind:str}/{item_id:int}", sync_to_thread=True)
    def item(self, request: AnyRequest, kind: FromPath[str], item_id: RowId) -> Template:
        """One item, its counterparts and why each is apart, and the match form."""
        view, holdings = read(
            request, _explain, kind, item_id, policy(request).match_window_seconds
        )
        return page(request, "exception.html", view=view, holdings=holdings)

    @post("/match")
    async def match(self, request: AnyRequest) -> Response[Any]:
        return await act(request, _match)

    @post("/accept")
    async def accept(self, request: AnyRequest) -> Response[Any]:
        return await act(request, _accept)

    @post("/unmatch")
    async def unmatch(self, request: AnyRequest) -> Response[Any]:
        return await act(request, _unmatch)
