"""`recon deliveries list|show|replay|choose`: see the webhook inbox, re-process a delivery,
and mark which body of a delivery id sent with two bodies is the true one.

Replay and choose are operator actions (`recon.cli.operator_door`): each leaves an audit row."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

import click

from recon.cli.operator_door import BY, act
from recon.cli.startup import fail, settings_or_exit
from recon.cli.terminal import output_width, say, shown_time, table_lines, width_option

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from foundation import Settings

T = TypeVar("T")

#: Largest row id the store holds (reconciliation.notifications.MAX_ROW_ID, not imported
#: here to keep the command's start-up light): a larger one is a usage error, not a traceback.
ROW_ID_LIMIT = 2**63 - 1


@contextmanager
def _session(settings: Settings) -> Iterator[Session]:
    from sqlalchemy.exc import OperationalError

    from reconciliation.store import make_engine, make_session_factory, transaction

    engine = make_engine(settings.store.database_url)
    try:
        with transaction(make_session_factory(engine)) as session:
            yield session
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else "connection failed"
        fail(f"database unreachable: {reason} (check DATABASE_URL; run `recon db upgrade` first)")
    finally:
        engine.dispose()


@click.group()
def deliveries() -> None:
    """Inspect the webhook inbox and replay deliveries."""


@deliveries.command("list")
@click.option("--state", type=click.Choice(["pending", "processed", "quarantined", "rejected"]))
@click.option("--event-type", help="For example PAYMENT_RECEIVED.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 500))
@click.option("--cursor", help="The 'next page' cursor printed by the previous call.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of a table.")
@width_option
def list_deliveries(
    state: str | None,
    event_type: str | None,
    limit: int,
    cursor: str | None,
    as_json: bool,
    width: int | None,
) -> None:
    """Inbox rows, newest first."""
    import msgspec

    from reconciliation.notifications import DeliveryPageOut, list_deliveries, summarise

    settings = settings_or_exit(store_only=True)
    with _session(settings) as session:
        try:
            page = list_deliveries(
                session, state=state, event_type=event_type, cursor=cursor, limit=limit
            )
        except (ValueError, LookupError) as exc:  # a bad filter or cursor: the store's own words
            fail(str(exc).strip("'\""))
        items = [summarise(row) for row in page.items]
    if as_json:
        out = DeliveryPageOut(items=items, next_cursor=page.next_cursor)
        say(msgspec.json.encode(out).decode())
        return
    if not items:
        say("no deliveries match")
        return
    header = ("row", "delivery id", "event", "state", "received", "attempts", "error")
    table = [header]
    for item in items:
        table.append(
            (
                str(item.id),
                item.delivery_id,
                item.event_type or "-",
                item.state,
                shown_time(item.received_at),
                str(item.attempts),
                (item.error or "-")[:60],
            )
        )
    say("\n".join(table_lines(table, output_width(width))))
    if page.next_cursor:
        say(f"\nnext page: recon deliveries list --cursor {page.next_cursor}")


@deliveries.command()
@click.argument("row_id", type=click.IntRange(1, ROW_ID_LIMIT))
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON document (body as text and base64)."
)
def show(row_id: int, as_json: bool) -> None:
    """One delivery: its state, the headers kept and the exact body received."""
    import msgspec

    from reconciliation.notifications import detail, get_delivery

    settings = settings_or_exit(store_only=True)
    with _session(settings) as session:
        row = get_delivery(session, row_id)
        if row is None:
            fail(f"no delivery with row id {row_id}: see `recon deliveries list`")
        shown = detail(row)
    if as_json:
        say(msgspec.json.encode(shown).decode())
        return
    d = shown.delivery
    say(f"row {d.id}  delivery {d.delivery_id}  {d.event_type or '-'}  {d.state}")
    say(f"received {shown_time(d.received_at)}  scheme {d.scheme}  attempts {d.attempts}")
    if d.error:
        say(f"error: {d.error}")
    for name, value in sorted(shown.headers.items()):
        say(f"{name}: {value}")
    say(f"body ({d.body_bytes} bytes, sha256 {shown.body_sha256}):")
    say(shown.body if shown.body is not None else f"(not UTF-8) base64 {shown.body_base64}")


@deliveries.command()
@click.argument("row_id", type=click.IntRange(1, ROW_ID_LIMIT), required=False)
@click.option(
    "--quarantined",
    is_flag=True,
    help="Every quarantined delivery (after recon learned their shape), instead of one row.",
)
@click.option(
    "--pending",
    is_flag=True,
    help="Re-send every pending delivery to the workers now, instead of waiting for the sweep.",
)
@click.option(
    "--limit",
    default=5000,
    show_default=True,
    type=click.IntRange(1, 5000),
    help="Most rows one bulk replay takes; run again while some remain.",
)
@BY
@click.option("--json", "as_json", is_flag=True, help="One JSON document (bulk replays).")
def replay(
    row_id: int | None,
    quarantined: bool,
    pending: bool,
    limit: int,
    by: str | None,
    as_json: bool,
) -> None:
    """Reset one delivery (ROW_ID), or every quarantined or pending one, to pending and enqueue.

    A bulk replay is how deliveries quarantined because no payload shape read them are read
    again once RECON_PAYLOAD_SHAPES or RECON_PAYLOAD_FIELD_MAP describes their shape (restart
    the workers first, so they read with the new settings).
    """
    from recon.cli.web_commands import delivery_enqueue
    from reconciliation.notifications import PENDING, QUARANTINED
    from reconciliation.operator import actions

    chosen = [flag for flag, on in (("--quarantined", quarantined), ("--pending", pending)) if on]
    if (row_id is None) == (not chosen) or len(chosen) > 1:
        fail("give one ROW_ID, or --quarantined, or --pending (see `recon deliveries list`)")
    settings = settings_or_exit()
    if row_id is None:
        state = QUARANTINED if quarantined else PENDING
        _replay_many(settings, by, state, limit, as_json)
        return
    row = act(settings, by, actions.replay, row_id)
    what = f"delivery {row.delivery_id} (row {row_id}) is pending again"
    say(f"{what}{_enqueued(delivery_enqueue(settings), [row_id])}")


@deliveries.command()
@click.argument("row_id", type=click.IntRange(1, ROW_ID_LIMIT))
@BY
@click.option(
    "--reason",
    required=True,
    help="Why this body is the true one (what the provider said); kept in the audit trail.",
)
def choose(row_id: int, by: str | None, reason: str) -> None:
    """Mark ROW_ID as the true body of a delivery id that arrived with different bodies.

    The settling step of a `delivery_body_conflict` alert (its evidence names the rows; `recon
    deliveries show ROW_ID` shows each body). The chosen body becomes the delivery's
    notification; every other body is kept unchanged as evidence, in state `rejected`; the
    alert is resolved in your name. A match the true body disagrees with is taken apart for a
    person to redo.
    """
    from reconciliation.operator import actions
    from upstream import reader_for

    settings = settings_or_exit()
    reader = reader_for(settings.webhooks)
    say(act(settings, by, actions.choose_body, row_id, reason, reader).describe())


def _replay_many(settings: Settings, by: str | None, state: str, limit: int, as_json: bool) -> None:
    """This command, `POST /deliveries/replay` and the console's "replay all" all go through
    `operator.actions.replay_many`."""
    import msgspec

    from recon.cli.web_commands import delivery_enqueue
    from reconciliation.notifications import replay_summary
    from reconciliation.operator import actions

    done = act(settings, by, actions.replay_many, state, limit)
    sent = _enqueued(delivery_enqueue(settings), done.row_ids) if done.row_ids else ""
    if as_json:
        say(msgspec.json.encode(replay_summary(done)).decode())
        return
    say(f"{len(done.row_ids)} {state} deliveries are pending again{sent}")
    if done.remaining:
        say(f"{done.remaining} more remain: run the command again")


def _enqueued(enqueue: Callable[[Sequence[int]], None] | None, row_ids: list[int]) -> str:
    """Hand rows to the workers; the tail of the message saying how they will be picked up."""
    if enqueue is None:
        return "; the workers pick up pending rows"
    try:
        enqueue(row_ids)
    except Exception as exc:  # noqa: BLE001 - the rows are pending; the sweeper will get to them
        return f", but enqueueing failed ({type(exc).__name__}); the sweep picks up pending rows"
    return " and enqueued"


COMMANDS = [deliveries]
