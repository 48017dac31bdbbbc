"""`recon demo`: the main job in one command, on the embedded default or on PostgreSQL + Redis."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from foundation import DEFAULT_STATE_DIR

#: Exit status after SIGTERM, as a shell reports a process ended by it (128 + 15).
EXIT_TERMINATED = 143


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
@click.option(
    "--serve",
    is_flag=True,
    help="When the scenario has settled, keep the sandbox and recon running with the operator "
    "console open until interrupted (Ctrl-C or SIGTERM, which stop them).",
)
def demo(report_path: Path, procfile: Path | None, serve: bool) -> None:
    """Run recon end to end against the bundled sandbox and print the reconciliation report.

    Starts the sandbox and recon's processes, registers the webhook, drives a business day with
    four injected faults (a dropped webhook, an altered amount, a re-used delivery id with
    another body, a stuck transfer), waits for reconciliation to settle, prints the report,
    writes the HTML report, and exits 0 only if recon found exactly the injected faults.
    With DATABASE_URL and REDIS_URL set it runs on PostgreSQL and Redis with separate
    web, worker and scheduler processes; otherwise on a fresh SQLite file in one web process.
    """
    from rich.console import Console

    from recon.demo.env_file import shell_hint
    from recon.demo.processes import Stopped, sigterm_as_interrupt
    from recon.demo.run import DemoOutcome, plan_demo, run_demo

    console = Console(stderr=True)
    state_dir = Path(os.environ.get("RECON_STATE_DIR", DEFAULT_STATE_DIR))
    plan = plan_demo(os.environ, state_dir, report_path, procfile)
    if plan.distributed:
        _require_redis(plan.env["REDIS_URL"])
    started = time.monotonic()
    with console.status("starting", spinner="dots") as status:

        def step(text: str) -> None:
            stamp = f"[{time.monotonic() - started:5.1f} s]"
            status.update(f"{stamp} {text}")
            if not text.startswith("reconciling"):
                # print, not log: Console.log would append this file's name and line number.
                console.print(f"{stamp} {text}", markup=False, highlight=False, soft_wrap=True)

        def hold_open(outcome: DemoOutcome) -> None:
            status.stop()
            click.echo(outcome.text_report)
            verdict = "exactly the injected faults" if outcome.ok else "NOT the injected faults"
            click.echo(f"recon found {verdict}; the sandbox and recon keep running.")
            click.echo(f"operator console: {plan.web_url}/console")
            click.echo(f"sign in with any name and the admin token in {plan.env_file}")
            click.echo("press Ctrl-C to stop")
            _wait_for_interrupt()

        try:
            with sigterm_as_interrupt():
                outcome = run_demo(plan, step, hold_open if serve else None)
        except Stopped:
            status.stop()
            click.echo("stopped (SIGTERM): the sandbox and recon were stopped", err=True)
            sys.exit(EXIT_TERMINATED)
        except Exception as exc:  # noqa: BLE001 - the demo ends with one readable line
            console.print(f"demo failed: {exc}", style="red", markup=False, soft_wrap=True)
            console.print(f"process logs: {plan.log_dir}", markup=False, soft_wrap=True)
            sys.exit(1)
    if not serve:  # a served demo printed its report before holding the console open
        click.echo(outcome.text_report)
    click.echo(f"HTML report: {report_path}")
    record = outcome.record
    click.echo(
        f"scenario: {len(record.endpoints)} accounts, {record.credits} inbound payments, "
        f"{record.transfers_settled} transfers settled, {record.transfers_denied} denied; "
        f"faults injected: {', '.join(record.injected)}"
    )
    elapsed = time.monotonic() - started
    click.echo(f"look around with the demo's settings: {shell_hint(plan.env_file)}")
    click.echo(outcome.tally())
    if outcome.ok:
        click.echo(f"recon found exactly the injected faults ({elapsed:.0f} s).")
        return
    if outcome.missing:
        click.echo(f"MISSED: {'; '.join(outcome.missing)}", err=True)
    if outcome.unexpected:
        click.echo(f"UNEXPECTED: {'; '.join(outcome.unexpected)}", err=True)
    click.echo(f"process logs: {plan.log_dir}", err=True)
    sys.exit(1)


def _wait_for_interrupt() -> None:
    """Block until Ctrl-C or SIGTERM (`sigterm_as_interrupt` makes it the same stop)."""
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        click.echo("stopping the sandbox and recon")


def _require_redis(redis_url: str) -> None:
    """One line within seconds when the demo's Redis is dead, before any process starts."""
    from workers import BrokerUnreachableError, require_redis

    try:
        require_redis(redis_url)
    except BrokerUnreachableError as exc:
        click.echo(f"demo failed: {exc}", err=True)
        sys.exit(1)


COMMANDS = [demo]
