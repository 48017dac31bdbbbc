"""`recon alerts list|ack|resolve`: the alert life cycle from a terminal."""

from __future__ import annotations

import json

import click

from recon.cli.reconcile_commands import open_store
from recon.cli.startup import fail, settings_or_exit


@click.group()
def alerts() -> None:
    """List, acknowledge and resolve alerts."""


@alerts.command("list")
@click.option(
    "--state",
    type=click.Choice(["active", "open", "acknowledged", "resolved", "all"]),
    default="active",
    show_default=True,
    help="active = open or acknowledged.",
)
@click.option("--kind", help="Only this kind, for example balance_mismatch.")
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON, evidence included.")
def list_command(state: str, kind: str | None, limit: int, as_json: bool) -> None:
    """Alerts, most urgent and newest first."""
    from rich.console import Console
    from rich.table import Table

    from reconciliation.alerts.lifecycle import alert_as_dict, list_alerts

    settings = settings_or_exit()
    with open_store(settings) as factory, factory() as session:
        found = [
            alert_as_dict(a)
            for a in list_alerts(
                session, state=None if state == "all" else state, kind=kind, limit=limit
            )
        ]
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    if not found:
        click.echo("no alerts")
        return
    table = Table()
    for header in ("id", "severity", "state", "kind", "opened"):
        table.add_column(header, no_wrap=True)
    table.add_column("subject", overflow="fold")
    for a in found:
        table.add_row(
            str(a["id"]), a["severity"], a["state"], a["kind"], a["openedAt"][:19], a["subject"]
        )
    Console().print(table)


def _change(alert_id: int, by: str, note: str | None, *, resolve: bool) -> None:
    from reconciliation.alerts.lifecycle import AlertError, acknowledge_alert, resolve_alert

    settings = settings_or_exit()
    with open_store(settings) as factory, factory() as session:
        try:
            change = resolve_alert if resolve else acknowledge_alert
            alert = change(session, alert_id, by=by, note=note)
            session.commit()
        except AlertError as exc:
            fail(str(exc))
        click.echo(f"alert {alert.id} is {alert.state}")


@alerts.command()
@click.argument("alert_id", type=int)
@click.option("--by", required=True, help="Who owns it now; recorded.")
@click.option("--note", help="What you are doing about it.")
def ack(alert_id: int, by: str, note: str | None) -> None:
    """Acknowledge ALERT_ID: you have seen it and own it."""
    _change(alert_id, by, note, resolve=False)


@alerts.command()
@click.argument("alert_id", type=int)
@click.option("--by", required=True, help="Who resolves it; recorded.")
@click.option("--note", help="How it was resolved.")
def resolve(alert_id: int, by: str, note: str | None) -> None:
    """Resolve ALERT_ID (it reopens if its condition clears and later comes back)."""
    _change(alert_id, by, note, resolve=True)


COMMANDS = [alerts]
