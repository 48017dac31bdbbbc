"""`recon prune`: remove what is past its retention now, optionally archiving it first.

The same run as the scheduled `prune` job (reconciliation.retention.runner), started by hand:
before a migration, after changing a retention setting, or to see with `--dry-run` what the
settings would remove. `--archive DIR` writes every removed row to DIR first, one compressed
JSON-lines file per table (`<table>-<run>.jsonl.gz`), each batch synced before it commits.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from recon.cli.startup import existing_store, fail, settings_or_exit
from recon.cli.terminal import shown_time


@click.command()
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@click.option(
    "--archive",
    "archive_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write what is removed to this folder first (.jsonl.gz, one file per table).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def prune(dry_run: bool, archive_dir: Path | None, as_json: bool) -> None:
    """Remove records past their retention (RECON_RETAIN_*), in small committed batches."""
    from reconciliation.retention import ArchiveError, run_retention

    settings = settings_or_exit()
    if dry_run and archive_dir is not None:
        fail("--dry-run removes nothing, so there is nothing to archive: drop one of the two")
    with existing_store(settings) as factory:
        try:
            result = run_retention(
                factory,
                settings.retention,
                match_window_seconds=settings.matching.match_window_seconds,
                projection_grace_seconds=settings.matching.projection_grace_seconds,
                dry_run=dry_run,
                archive_dir=archive_dir or settings.retention.archive_dir,
                hold_pass=True,
            )
        except ArchiveError as exc:
            fail(f"{exc}; the batches before it were archived and removed, nothing after it")
    summary = result.as_dict()
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    verb = "would remove" if dry_run else "removed"
    removed = summary["removed"] or {"(nothing)": 0}
    click.echo(f"{verb}: " + ", ".join(f"{table} {n}" for table, n in removed.items()))
    for kind, cutoff in summary["cutoffs"].items():
        click.echo(f"  {kind}: older than {shown_time(cutoff)}")
    for path in summary["archived"]:
        click.echo(f"archived to {path}")
    if summary["deferred"]:
        click.echo("reconciled facts: a running pass kept the lease; the next prune takes them")
    if summary["vacuumed"]:
        click.echo(f"vacuumed {', '.join(summary['vacuumed'])} ({summary['vacuumSeconds']:.2f}s)")
    click.echo(
        f"took {summary['seconds']:.2f}s" + ("; nothing was removed (dry run)" if dry_run else "")
    )


COMMANDS = [prune]
