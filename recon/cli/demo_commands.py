"""`recon demo`: the main job in one command, on the embedded default or on PostgreSQL + Redis."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from foundation.settings import DEFAULT_STATE_DIR


@click.command()
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("out/recon-report.html"),
    show_default=True,
    help="Where to write the HTML report.",
)
@click.option(
    "--procfile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Start recon's processes from this Procfile under honcho (needs DATABASE_URL and REDIS_URL).",
)
def demo(report_path: Path, procfile: Path | None) -> None:
    """Run recon end to end against the bundled sandbox and print the reconciliation report.

    Starts the sandbox and recon's processes, registers the webhook, drives a business day with
    four injected faults (a dropped webhook, an altered amount, a re-used delivery id with
    another body, a stuck transfer), waits for reconciliation to settle, prints the report,
    writes the HTML report, and exits 0 only if recon found exactly the injected faults.
    With DATABASE_URL and REDIS_URL set it runs on PostgreSQL and Redis with separate
    web, worker and scheduler processes; otherwise on a fresh SQLite file in one web process.
    """
    from rich.console import Console

    from recon.demo.run import plan_demo, run_demo

    console = Console(stderr=True)
    state_dir = Path(os.environ.get("RECON_STATE_DIR", DEFAULT_STATE_DIR))
    plan = plan_demo(os.environ, state_dir, report_path, procfile)
    started = time.monotonic()
    with console.status("starting", spinner="dots") as status:

        def step(text: str) -> None:
            status.update(f"[{time.monotonic() - started:5.1f} s] {text}")
            if not text.startswith("reconciling"):
                console.log(text)

        try:
            outcome = run_demo(plan, step)
        except Exception as exc:  # noqa: BLE001 - the demo ends with one readable line
            console.print(f"[red]demo failed:[/red] {exc}")
            console.print(f"process logs: {plan.log_dir}")
            sys.exit(1)
    click.echo(outcome.text_report)
    click.echo(f"HTML report: {report_path}")
    record = outcome.record
    click.echo(
        f"scenario: {len(record.endpoints)} accounts, {record.credits} inbound payments, "
        f"{record.transfers_settled} transfers settled, {record.transfers_denied} denied; "
        f"faults injected: {', '.join(record.injected)}"
    )
    elapsed = time.monotonic() - started
    if outcome.ok:
        click.echo(f"recon found exactly the injected faults ({elapsed:.0f} s).")
        return
    if outcome.missing:
        click.echo(f"MISSED: no alert of kind {', '.join(outcome.missing)}", err=True)
    if outcome.unexpected:
        click.echo(f"UNEXPECTED alerts: {', '.join(outcome.unexpected)}", err=True)
    click.echo(f"process logs: {plan.log_dir}", err=True)
    sys.exit(1)


COMMANDS = [demo]
