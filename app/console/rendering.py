"""What every console handler shares: the store, the signed-in operator, pages and redirects.

Handlers stay one to three lines: `page(...)` renders a template with the context every page
needs (who is signed in, the CSRF token, the time, a message from the last action), `read`
runs a query function in a read transaction, and `act` runs a change from a form through the
operator service (reconciliation.operator.actions: its own transaction, its audit row from the
door `console`) in a worker thread, then redirects (POST, redirect, GET) with what happened.

What happened travels in the redirect as a key (`?done=resolved`), and the page shows the
sentence DONE_MESSAGES holds for it: text in a URL is anyone's to write, and a sentence of
their choosing in recon's own flash box is a phishing line on a trusted page. A refused change
is answered at once with a page naming the reason (400) and a way back, never via the URL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, TypeVar
from urllib.parse import urlencode

import anyio.to_thread
from litestar import Request, Response
from litestar.datastructures import FormMultiDict
from litestar.exceptions import HTTPException
from litestar.response import Redirect, Template
from markupsafe import escape
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from app import state_keys
from app.console.session import OPERATOR_STATE_KEY, Operator, csrf_token, key_of
from app.reporting_routes import POLICY_STATE_KEY
from reconciliation import ReconcilePolicy
from reconciliation.operator import CONSOLE, ActionRefusedError, OperatorService
from reconciliation.store import transaction, utcnow

#: The console's sections, in the order of its navigation bar: (path, label).
SECTIONS: Final = (
    ("/console", "Overview"),
    ("/console/alerts", "Alerts"),
    ("/console/exceptions", "Exceptions"),
    ("/console/deliveries", "Deliveries"),
    ("/console/holdings", "Holdings"),
    ("/console/reports", "Reports"),
    ("/console/audit", "Audit trail"),
)

#: Every sentence the flash box can show, by the key a redirect carries in `?done=`. Any
#: other value shows nothing.
DONE_MESSAGES: Final = {
    "acknowledged": "Alert acknowledged.",
    "resolved": "Alert resolved.",
    "matched": "Matched by hand.",
    "unmatched": "Match taken apart; each item left alone has an alert open until it is decided.",
    "accepted": "Accepted without a counterpart.",
    "replayed": "The delivery is pending again.",
    "replayed-all": "The quarantined deliveries are pending again.",
    "replayed-some": "Quarantined deliveries are pending again; more remain: press again.",
    "none-quarantined": "No delivery is quarantined: nothing to replay.",
    "chose-body": "This body is now the true one; the other bodies are kept as evidence.",
}

T = TypeVar("T")
AnyRequest = Request[Any, Any, Any]


def store(request: AnyRequest) -> sessionmaker[Session]:
    factory: sessionmaker[Session] = request.app.state[state_keys.SESSION_FACTORY]
    return factory


def policy(request: AnyRequest) -> ReconcilePolicy:
    found: ReconcilePolicy | None = request.app.state.get(POLICY_STATE_KEY)
    return found or ReconcilePolicy()


def operator(request: AnyRequest) -> Operator:
    found: Operator = request.state[OPERATOR_STATE_KEY]
    return found


def service(request: AnyRequest, name: str | None = None) -> OperatorService:
    """The operator service acting as the signed-in operator (or `name`, at sign-in) through the
    door `console`."""
    return OperatorService(
        store(request), operator(request).name if name is None else name, CONSOLE
    )


def read(request: AnyRequest, query: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `query(session, *args, **kwargs)` in one transaction (for sync handlers).

    On PostgreSQL the transaction runs without JIT compilation: the console asks small,
    index-driven questions, and the planner's cost estimates for a capped scan with a probe per
    row (the exception counts, a report's open items) pass `jit_above_cost`, so PostgreSQL
    spent 0.4-0.8 s compiling a statement that then ran in milliseconds.
    """
    with transaction(store(request)) as session:
        if session.get_bind().dialect.name == "postgresql":
            session.execute(text("SET LOCAL jit = off"))
        return query(session, *args, **kwargs)


@contextmanager
def answered(answer: type[HTTPException], *errors: type[Exception]) -> Iterator[None]:
    """A read's `errors` as the page's `answer` (a 400 or 404) with their message, which says
    what to change."""
    try:
        yield
    except errors as exc:
        raise answer(detail=str(exc)) from None


def page(request: AnyRequest, template: str, **context: Any) -> Template:
    """A console page with the shared context."""
    who = operator(request)
    return Template(
        template_name=template,
        context={
            "operator": who,
            "csrf": csrf_token(key_of(request), who),
            "now": utcnow(),
            "sections": SECTIONS,
            "path": request.url.path,
            "done": DONE_MESSAGES.get(request.query_params.get("done") or ""),
            **context,
        },
    )


def back(path: str, *, done: str) -> Redirect:
    """303 to `path`, whose page shows DONE_MESSAGES[done]."""
    if done not in DONE_MESSAGES:
        raise KeyError(f"{done!r} is not a key of DONE_MESSAGES")
    target = f"{path}{'&' if '?' in path else '?'}{urlencode({'done': done})}"
    return Redirect(path=target, status_code=303)


def refusal_page(status: int, detail: str, back_to: str = "/console") -> Response[str]:
    """A refusal (bad filter, unknown id, stale form, a change refused) as a short page with
    the reason, escaped, and a link back to `back_to` (a console path)."""
    body = (
        "<!doctype html><meta charset=utf-8><title>recon console</title>"
        '<link rel="stylesheet" href="/console/static/console.css">'
        '<link rel="icon" href="/console/static/favicon.svg" type="image/svg+xml">'
        f'<main class="refusal"><h1>{status}</h1><p>{escape(detail)}</p>'
        f'<p><a href="{escape(back_to)}">Back</a></p></main>'
    )
    return Response(content=body, status_code=status, media_type="text/html")


@dataclass(frozen=True, slots=True)
class Outcome:
    """Where a change sends the person next, the DONE_MESSAGES key of what it did, and inbox
    rows to enqueue."""

    path: str
    done: str
    enqueue: tuple[int, ...] = ()


#: A change made from a form: (the signed-in operator's service, form) -> its Outcome.
Change = Callable[[OperatorService, FormMultiDict], Outcome]


def back_field(form: FormMultiDict, name: str = "back") -> str:
    """A form's path field when it is a console path (never a redirect elsewhere)."""
    target = str(form.get(name) or "")
    return target if target.startswith("/console") and "//" not in target else "/console"


async def act(request: AnyRequest, change: Change, on_refused: str | None = None) -> Response[Any]:
    """Apply a change (through the operator service, in its own transaction) in a worker thread;
    a refusal is a 400 page with its reason and a link back to `on_refused` (default: the form's
    `here` field, the page the form is on).

    Inbox rows the change reset are enqueued only after its commit (as the JSON API does).
    """
    form = await request.form()
    on_refused = on_refused or back_field(form, "here")
    acting = service(request)
    try:
        outcome = await anyio.to_thread.run_sync(change, acting, form)
    except ActionRefusedError as exc:
        return refusal_page(400, str(exc), on_refused)
    if outcome.enqueue:
        enqueue: Callable[[Sequence[int]], None] = request.app.state[state_keys.ENQUEUE]
        enqueue(list(outcome.enqueue))
    return back(outcome.path, done=outcome.done)
