"""`recon alerts list|ack|resolve`: the alert life cycle from a terminal."""

from __future__ import annotations

import json
import textwrap
from datetime import datetime
from typing import Any, Final

import click

from foundation import time_ago, words
from recon.cli.operator_door import BY, act
from recon.cli.startup import existing_store, settings_or_exit
from recon.cli.terminal import output_width, say, shown_time, shown_time_and_age


@click.group()
def alerts() -> None:
    """List, acknowledge and resolve alerts."""


#: Lines a subject may take at a terminal before it ends in an ellipsis.
SUBJECT_LINES: Final = 3

#: Indent of a subject under its alert's header line.
SUBJECT_INDENT: Final = "    "

#: Columns of the tab-separated form a pipe gets (one alert per line, nothing cut).
PIPE_COLUMNS: Final = ("id", "severity", "state", "kind", "opened", "subject")


def _clip(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 1].rstrip() + "\u2026"


def terminal_lines(found: list[dict[str, Any]], width: int, now: datetime) -> list[str]:
    """Each alert as a header line (aligned across alerts) and its subject wrapped beneath.

    Nothing is wider than `width`: a header that does not fit ends in an ellipsis, a subject
    wraps under its header and, past SUBJECT_LINES lines, ends in an ellipsis.
    """
    ids = [f"#{a['id']}" for a in found]
    states = [words(a["state"]) for a in found]
    id_w = max(map(len, ids))
    state_w = max(map(len, states))
    kind_w = max(len(a["kind"]) for a in found)
    severity_w = max(len(a["severity"]) for a in found)
    lines = []
    for a, ident, state in zip(found, ids, states, strict=True):
        opened = datetime.fromisoformat(a["openedAt"])
        head = f"{ident:>{id_w}}  {a['severity']:<{severity_w}}  {state:<{state_w}}  "
        head += f"{a['kind']:<{kind_w}}  "
        # The longest form of the time that fits: a time cut in half helps nobody.
        whens = (
            f"opened {shown_time_and_age(opened, now)}",
            shown_time_and_age(opened, now),
            shown_time(opened),
            time_ago(opened, now),
        )
        when = next((w for w in whens if len(head) + len(w) <= width), whens[-1])
        lines.append(_clip(head + when, width))
        wrapped = textwrap.wrap(
            a["subject"],
            width=width,
            initial_indent=SUBJECT_INDENT,
            subsequent_indent=SUBJECT_INDENT,
            break_long_words=True,
            # A reference (uuid) stays whole on one line, so it can be copied and searched.
            break_on_hyphens=False,
        )
        if len(wrapped) > SUBJECT_LINES:
            wrapped = wrapped[:SUBJECT_LINES]
            wrapped[-1] = _clip(wrapped[-1] + " \u2026", width)
        lines.extend(wrapped)
    return lines


def pipe_lines(found: list[dict[str, Any]]) -> list[str]:
    """Tab-separated, one alert per line, a header first: every value whole, for scripts."""
    rows = ["\t".join(PIPE_COLUMNS)]
    for a in found:
        opened = shown_time(datetime.fromisoformat(a["openedAt"]))
        subject = " ".join(a["subject"].split())  # a tab or newline would break the row
        rows.append(
            "\t".join((str(a["id"]), a["severity"], a["state"], a["kind"], opened, subject))
        )
    return rows


def _known_kind(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A kind recon raises, or a usage error listing them: a typo must not read "no alerts"."""
    from reconciliation.operator import UnknownAlertKindError, checked_kind

    if value is None:
        return None
    try:
        return checked_kind(value)
    except UnknownAlertKindError as exc:
        raise click.BadParameter(str(exc)) from None


#: Where a person reads what an alert means and what to do, shown under `alerts list --help`.
RUNBOOK_EPILOG: Final = (
    "What each kind means, why it fires, how it clears and what to do: docs/alerts.md, one "
    "section per kind, also served by `recon web` at /console/runbook/KIND (linked from each "
    "alert's page in the console)."
)


@alerts.command("list", epilog=RUNBOOK_EPILOG)
@click.option(
    "--state",
    type=click.Choice(["active", "open", "acknowledged", "resolved", "all"]),
    default="active",
    show_default=True,
    help="active = open or acknowledged.",
)
@click.option(
    "--kind",
    callback=_known_kind,
    help="Only this kind, for example balance_mismatch (an unknown kind is refused with the "
    "list of kinds).",
)
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON, evidence included.")
@click.option(
    "--width",
    type=click.IntRange(min=1),
    help="Lay out for this many columns (default: the terminal's; a pipe gets tab-separated "
    "lines, nothing cut).",
)
def list_command(
    state: str, kind: str | None, limit: int, as_json: bool, width: int | None
) -> None:
    """Alerts, most urgent and newest first."""
    from reconciliation.alerts import alert_as_dict, list_alerts
    from reconciliation.store import utcnow

    settings = settings_or_exit(store_only=True)
    with existing_store(settings) as factory, factory() as session:
        found = [
            alert_as_dict(a)
            for a in list_alerts(
                session, state=None if state == "all" else state, kind=kind, limit=limit
            )
        ]
    if as_json:
        say(json.dumps(found, indent=2))
        return
    if not found:
        say("no alerts")
        return
    columns = output_width(width)
    lines = pipe_lines(found) if columns is None else terminal_lines(found, columns, utcnow())
    say("\n".join(lines))


def _decision(name: str, action: str, doc: str, note_help: str) -> None:
    """`recon alerts NAME ALERT_ID --note ...`: the operator action `action` on one alert."""

    @alerts.command(name, help=doc)
    @click.argument("alert_id", type=int)
    @BY
    @click.option("--note", required=True, help=note_help)
    def decide(alert_id: int, by: str | None, note: str) -> None:
        from reconciliation.operator import actions

        settings = settings_or_exit(store_only=True)
        alert = act(settings, by, getattr(actions, action), alert_id, note)
        say(f"alert {alert.id} is {alert.state}")


_decision(
    "ack",
    "acknowledge",
    "Acknowledge ALERT_ID: you have seen it and own it.",
    "What you are doing about it; recorded.",
)
_decision(
    "resolve",
    "resolve",
    "Resolve ALERT_ID (it reopens if its condition clears and later comes back).",
    "How it was resolved; recorded.",
)


COMMANDS = [alerts]
