"""`recon webhooks register|list|rotate`: our webhook registration at the company API.

Register and rotate go through reconciliation.operator.provider_actions, so each leaves one
audit row naming who acted (`--by`, else the user running the command) in the transaction that
records the webhook. `list` refreshes the stored copy of the provider's counters, a read that
decides nothing, and leaves none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

import click

from recon.cli.operator_door import BY, act_at_provider
from recon.cli.startup import existing_store, fail, settings_or_exit
from recon.cli.terminal import output_width, say, shown_time, table_lines, width_option

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from foundation import Settings
    from reconciliation.store import Subscription
    from upstream import CompanyClient

T = TypeVar("T")


@contextmanager
def _store_and_client(
    settings: Settings,
) -> Iterator[tuple[sessionmaker[Session], CompanyClient]]:
    from reconciliation.notifications import company_client

    # The registration is kept in the store, so it must exist already: never create one here.
    with existing_store(settings) as factory, company_client(settings) as client:
        yield factory, client


def _run(action: Callable[[], T]) -> T:
    """Run a store + provider action; known failures end with one line, not a traceback."""
    from sqlalchemy.exc import OperationalError

    from reconciliation.notifications import RegistrationBusyError
    from upstream import ProviderError

    try:
        return action()
    except ProviderError as exc:
        fail(f"the company API refused or failed: {exc}")
    except RegistrationBusyError as exc:
        fail(str(exc))
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else "connection failed"
        fail(f"database unreachable: {reason} (check DATABASE_URL; run `recon db upgrade` first)")


def _registration(action: Callable[..., T], wait: float, by: str | None) -> tuple[Settings, T]:
    """Register (or rotate) as `by`, through the operator service; the settings it ran with."""
    settings = settings_or_exit(keeps_secrets=True)
    with _store_and_client(settings) as (factory, client):
        return settings, _run(lambda: act_at_provider(factory, by, action, settings, client, wait))


#: `--wait` of the commands that register: another registration may be under way.
WAIT = click.option(
    "--wait", default=30.0, show_default=True, help="Seconds to wait for another registration."
)


@click.group()
def webhooks() -> None:
    """Register, inspect and rotate recon's webhook at the company API."""


@webhooks.command()
@WAIT
@BY
def register(wait: float, by: str | None) -> None:
    """Register RECON_PUBLIC_URL + RECON_WEBHOOK_PATH unless an ACTIVE webhook points there."""
    from reconciliation.operator import register_webhook

    _, result = _registration(register_webhook, wait, by)
    if result.created:
        say(f"registered webhook {result.webhook_id} -> {result.url} ({result.status})")
    else:
        say(f"already registered: webhook {result.webhook_id} -> {result.url} ({result.status})")


@webhooks.command("list")
@width_option
def list_webhooks(width: int | None) -> None:
    """Show our webhooks: status, delivery counters and how many secrets are accepted."""
    from reconciliation.notifications import list_subscriptions, secret_counts, sync_webhooks
    from reconciliation.store import transaction
    from upstream import ProviderError

    settings = settings_or_exit(keeps_secrets=True)
    with _store_and_client(settings) as (factory, client):

        def read() -> tuple[list[Subscription], dict[int | None, int]]:
            try:
                sync_webhooks(settings, factory, client)
            except ProviderError as exc:
                say(f"(showing the stored view: the company API failed: {exc})", err=True)
            with transaction(factory) as session:
                return list_subscriptions(session), secret_counts(session)

        rows, counts = _run(read)
    if not rows:
        say("no webhook known yet: run `recon webhooks register`")
        return
    header = (
        "webhook",
        "status",
        "total",
        "ok",
        "failed",
        "last delivery",
        "secrets",
        "notes",
        "url",
    )
    table = [header]
    for row in rows:
        notes = []
        if not row.registered_by_recon:
            notes.append("registered elsewhere")
        if row.retired_at is not None:
            notes.append(f"retired {_when(row.retired_at)}")
        table.append(
            (
                row.webhook_id,
                row.status,
                str(row.total_deliveries),
                str(row.successful_deliveries),
                str(row.failed_deliveries),
                _when(row.last_triggered),
                str(counts.get(row.id, 0)),
                ", ".join(notes) or "-",
                row.url,
            )
        )
    say("\n".join(table_lines(table, output_width(width))))
    pending = counts.get(None, 0)
    if pending:
        say(f"\n{pending} secret(s) stored by an unfinished registration are accepted too")
    if settings.webhooks.secrets:
        say(f"{len(settings.webhooks.secrets)} secret(s) from RECON_WEBHOOK_SECRETS accepted")


@webhooks.command()
@WAIT
@BY
def rotate(wait: float, by: str | None) -> None:
    """Register a new secret; the old ones stay accepted for RECON_WEBHOOK_ROTATION_OVERLAP_SECONDS."""
    from reconciliation.operator import rotate_webhook_secret

    settings, result = _registration(rotate_webhook_secret, wait, by)
    hours = settings.webhooks.rotation_overlap_seconds / 3600
    say(
        f"registered webhook {result.webhook_id} -> {result.url} with a new secret; the old "
        f"secrets stay accepted for {hours:g} h. The company API cannot deactivate the old "
        "webhook: deactivate it in the provider's dashboard (or let the provider suspend it once "
        "its deliveries are refused after the overlap)."
    )


def _when(value: datetime | None) -> str:
    return shown_time(value, missing="-")


COMMANDS = [webhooks]
