"""`recon audit` and `recon rebuild`: prove the store's books against the gateway and its facts.

`recon audit` re-reads every holding's posted activity from the gateway (at the shared gateway
rate limit, the pollers' own, through the workers' runtime) and compares it with the stored
postings; the live cursors are left exactly where they are. `recon rebuild` recomputes the
derived state from the facts the live store's last pass judged into a scratch schema and
compares it with the live one; facts that came after that pass are counted as not yet judged. Both
print the digest of the derived state, so two runs or two deployments compare at a glance.

Exit status: 0 when everything agrees (or a swap was made), 1 when something differs, 2 for a
usage or configuration error.
"""

from __future__ import annotations

import json
import sys
from typing import Any
from uuid import UUID

import click

from recon.cli.startup import cli_options, existing_store, fail, settings_or_exit
from recon.cli.terminal import shown_time, took


def _print_digest(title: str, digest: dict[str, Any]) -> None:
    """One line with the digest (two runs compare at a glance); each table's own digest only
    under `recon --verbose`, for finding which table two digests disagree on."""
    click.echo(f"{title}: {digest['digest']}")
    if cli_options().verbose:
        for table, value in digest["tables"].items():
            click.echo(f"  {table:<16} {value}")


@click.command()
@click.option(
    "--holding",
    "holding",
    help="Audit only this holding: its account number, part of its account name, or holdingRef.",
)
@click.option("--since", help="Only postings posted from this date or time on.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def audit(holding: str | None, since: str | None, as_json: bool) -> None:
    """Re-read every holding's postings from the gateway and compare them with the store."""
    from reconciliation.ledger_audit import AuditScopeError, audit_ledger, fetch_from
    from reconciliation.postings import HoldingLookupError, resolve_holding
    from reconciliation.rebuild import state_digest
    from reconciliation.reports import ReportError, parse_moment
    from workers import build_runtime

    settings = settings_or_exit()
    try:  # the report's reading of a moment: a date is its UTC midnight, a time needs a zone
        window = None if since is None else parse_moment(since, "--since")
    except ReportError as exc:
        fail(str(exc))
    holding_ref = None
    with existing_store(settings) as sessions:  # the store exists with its schema: it may run
        if holding is not None:
            try:
                with sessions() as session:
                    holding_ref = UUID(resolve_holding(session, holding).ref)
            except HoldingLookupError as exc:
                fail(f"--holding: {exc}")
    runtime = build_runtime(settings)
    try:
        result = audit_ledger(
            runtime.sessions,
            fetch_from(runtime.gateway),
            holding_ref=holding_ref,
            since=window,
            page_size=settings.provider.activity_page_size,
        )
        with runtime.engine.connect() as connection:
            derived = state_digest(connection).as_dict()
    except AuditScopeError as exc:
        fail(str(exc))
    finally:
        runtime.close()
    summary = result.as_dict() | {"derivedState": derived}
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        _print_audit(summary)
    sys.exit(0 if result.status == "clean" else 1)


def _print_audit(summary: dict[str, Any]) -> None:
    click.echo(
        f"audit {summary['run']}: {summary['status']}, {summary['holdings']:,} holdings, "
        f"{summary['postings']:,} postings read from the gateway"
    )
    kinds = summary["byKind"]
    click.echo(
        "divergences: "
        + ", ".join(f"{kind.removeprefix('audit_posting_')} {n}" for kind, n in kinds.items())
    )
    for h in summary["holdingsDiffering"]:
        g, s = h["gateway"], h["store"]
        click.echo(
            f"  holding {h['holding']} ({h['holdingRef']}): gateway {g['count']} net {g['net']}, "
            f"store {s['count']} net {s['net']}" + (f"; {h['error']}" if h["error"] else "")
        )
        for day in h["days"][:10]:
            click.echo(
                f"    {day['day']}: gateway {day['gateway']['count']} / {day['gateway']['net']}"
                f", store {day['store']['count']} / {day['store']['net']}"
            )
    for d in summary["sample"]:
        click.echo(f"  {d['kind']}: {d['subject']}")
    click.echo(
        f"alerts raised or refreshed {summary['alertsRaised']}, resolved {summary['alertsResolved']}"
    )
    click.echo(f"audit digest (the gateway's postings): {summary['digest']}")
    _print_digest("derived state digest", summary["derivedState"])


@click.command()
@click.option("--dry-run", is_flag=True, help="Rebuild and compare, then drop the rebuilt state.")
@click.option(
    "--swap",
    is_flag=True,
    help="Rebuild, compare, then replace the live derived tables in one transaction.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def rebuild(dry_run: bool, swap: bool, as_json: bool) -> None:
    """Recompute every derived table from the raw facts beside the live one, and compare."""
    from reconciliation import ReconcilePolicy
    from reconciliation.rebuild import Mode, RebuildError, ScratchError, StaleRebuildError
    from reconciliation.rebuild import rebuild as run_rebuild
    from upstream import reader_for

    if dry_run and swap:
        fail("--dry-run and --swap contradict each other: a dry run changes nothing")
    mode = Mode.SWAP if swap else (Mode.DRY_RUN if dry_run else Mode.KEEP)
    settings = settings_or_exit()
    with existing_store(settings) as factory:
        engine = factory.kw["bind"]
        try:
            result = run_rebuild(
                engine,
                ReconcilePolicy.from_settings(settings),
                reader_for(settings.webhooks),
                mode=mode,
            )
        except (RebuildError, ScratchError, StaleRebuildError) as exc:
            fail(str(exc))
    summary = result.as_dict()
    if as_json:
        click.echo(json.dumps(summary, indent=2, default=str))
    else:
        _print_rebuild(summary)
    comparison = summary["comparison"]
    sys.exit(0 if swap or comparison["same"] else 1)


def _print_rebuild(summary: dict[str, Any]) -> None:
    """The verdict first (equal, or which tables differ), then how it was made; digests and
    timings last, each table's and each phase's only under `recon --verbose`."""
    inbox = summary["inbox"]
    comparison = summary["comparison"]
    if comparison["same"]:
        click.echo("the rebuilt state equals the live one")
    else:
        tables = ", ".join(d["table"] for d in comparison["differences"])
        click.echo(f"the rebuilt state differs from the live one in: {tables}")
    click.echo(
        f"rebuilt as of {shown_time(summary['asOf'])} in {summary['scratch']} ({summary['mode']})"
    )
    click.echo(
        f"inbox read again: {inbox['read']:,} deliveries, {inbox['notifications']:,} "
        f"notifications, {inbox['quarantined']:,} quarantined, {inbox['restated']:,} restated"
    )
    horizon = summary["horizon"]
    if horizon is not None:
        waiting = {kind: n for kind, n in horizon["notYetJudged"].items() if n}
        click.echo(
            "not yet judged by a pass (left out of both states): "
            + (", ".join(f"{n:,} {kind}" for kind, n in waiting.items()) or "nothing")
        )
    for d in comparison["differences"]:
        click.echo(f"{d['table']}: {d['liveOnly']} rows only live, {d['rebuiltOnly']} only rebuilt")
        for row in d["liveSample"]:
            click.echo(f"  - live    {row}")
        for row in d["rebuiltSample"]:
            click.echo(f"  + rebuilt {row}")
    if summary["swapped"] is not None:
        written = {k: v for k, v in summary["swapped"].items() if v}
        click.echo(f"swapped: {written or 'nothing needed changing'}")
        _print_digest("live derived state after the swap", summary["afterSwap"])
    _print_digest("live derived state", comparison["live"])
    _print_digest("rebuilt derived state", comparison["rebuilt"])
    click.echo(f"took {took(summary['seconds'], each=cli_options().verbose)}")


COMMANDS = [audit, rebuild]
