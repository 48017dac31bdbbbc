"""`recon report`: the reconciliation report on demand, in text, JSON, CSV or HTML."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from recon.cli.operator_door import BY, act
from recon.cli.output_file import OutputFileError, is_stdout, write_atomically
from recon.cli.startup import existing_store, fail, settings_or_exit
from recon.cli.terminal import output_width, say

if TYPE_CHECKING:
    from reconciliation.reports import Report


@click.command()
@click.option("--since", help="Start of the window: 2026-11-01 or 2026-11-01T00:00:00Z.")
@click.option("--until", help="End of the window (default now), same forms.")
@click.option(
    "--holding",
    help="Only this holding: its account number, part of its account name, or its holdingRef.",
)
@click.option(
    "--format",
    "report_format",
    type=click.Choice(["text", "json", "csv", "html"]),
    default="text",
    show_default=True,
)
@click.option(
    "--section",
    help=(
        "CSV only: the one section the file holds (default items, one row per unmatched item; "
        "also summary, drift, fees, totals, transfers, ageing, alerts, open_alerts, holdings, "
        "window, audit, legend)."
    ),
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    help="Write to this file (replaced in one step; '-' is standard output).",
)
@click.option(
    "--width",
    type=click.IntRange(min=1),
    help="Lay text out for this many columns (default: the terminal's; unlimited in a pipe).",
)
@BY
def report(
    since: str | None,
    until: str | None,
    holding: str | None,
    report_format: str,
    section: str | None,
    output: Path | None,
    width: int | None,
    by: str | None,
) -> None:
    """Figures with their legend, unmatched items, exceptions by age, alerts, balance drift.

    With --output the report leaves recon as a file: it goes through the operator service and
    is recorded in the audit trail (who: --by, else the user running the command), as the
    console's and the API's downloads are; printed to standard output it is only read."""
    from app.report_formats import check_format, render
    from reconciliation import ReconcilePolicy
    from reconciliation.operator import actions
    from reconciliation.reports import ReportAsked, ReportError, build_asked
    from reconciliation.store import utcnow

    settings = settings_or_exit(store_only=True)
    if output is not None and is_stdout(output):
        output = None
    asked = ReportAsked(report_format, section, since, until, holding)
    rules = ReconcilePolicy.from_settings(settings)
    try:
        check_format(report_format, section)
    except ReportError as exc:
        fail(str(exc))
    if output is None:
        try:
            with existing_store(settings) as factory, factory() as session:
                built = build_asked(session, asked, rules, utcnow())
        except ReportError as exc:
            fail(str(exc))
        click.echo(
            render(built, report_format, width=output_width(width), section=section), nl=False
        )
        return
    target = output

    def write(built: Report) -> int:
        return write_atomically(target, render(built, report_format, width=width, section=section))

    try:
        size = act(settings, by, actions.download_report, asked, rules, write)
    except OutputFileError as exc:
        fail(str(exc))
    say(f"wrote {output} ({report_format}, {size:,} bytes)")


COMMANDS = [report]
