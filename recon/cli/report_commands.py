"""`recon report`: the reconciliation report on demand, in text, JSON, CSV or HTML."""

from __future__ import annotations

from pathlib import Path

import click

from recon.cli.output_file import OutputFileError, is_stdout, write_atomically
from recon.cli.reconcile_commands import open_store
from recon.cli.startup import fail, settings_or_exit
from recon.cli.terminal import output_width, say


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
def report(
    since: str | None,
    until: str | None,
    holding: str | None,
    report_format: str,
    section: str | None,
    output: Path | None,
    width: int | None,
) -> None:
    """Figures with their legend, unmatched items, exceptions by age, alerts, balance drift."""
    from app.report_formats import check_format, render
    from reconciliation.reports import ReportError, build_report, items_listed, parse_window
    from reconciliation.store import utcnow

    settings = settings_or_exit(store_only=True)
    if output is not None and is_stdout(output):
        output = None
    columns = width if output is not None else output_width(width)
    try:
        check_format(report_format, section)
        window = parse_window(since, until, holding, utcnow())
        with open_store(settings) as factory, factory() as session:
            built = build_report(
                session,
                window,
                grace_seconds=settings.matching.notification_grace_seconds,
                finality_seconds=settings.matching.finality_deadline_seconds,
                items_listed=items_listed(report_format, section),
            )
        text = render(built, report_format, width=columns, section=section)
    except ReportError as exc:
        fail(str(exc))
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        size = write_atomically(output, text)
    except OutputFileError as exc:
        fail(str(exc))
    say(f"wrote {output} ({report_format}, {size:,} bytes)")


COMMANDS = [report]
