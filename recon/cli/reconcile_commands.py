"""`recon reconcile`, `recon match`, `recon accept`, `recon unmatch`: run a pass, decide an
exception by hand.

The decisions go through the operator service (`reconciliation.operator.actions`, by way of
`recon.cli.operator_door`), as the console's and the API's do, so each leaves the same audit
row whichever door it came through.

A pass in a terminal shows Rich progress bars on stderr (matching batches, drift rules); piped
or in a job it prints only its summary. `--dry-run` runs the same pass and rolls it back: it
shows what would be matched and which alerts would open or resolve, and writes nothing.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any

import click

from recon.cli.operator_door import BY, act
from recon.cli.startup import cli_options, existing_store, fail, settings_or_exit
from recon.cli.terminal import say, took


class RichProgress:
    """The pass's progress as Rich bars on stderr, one per phase."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bars = Progress(
            TextColumn("{task.description:<32}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        self._task: Any = None

    def __enter__(self) -> RichProgress:
        self._bars.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._bars.stop()

    def phase(self, name: str, total: int) -> None:
        self._task = self._bars.add_task(name, total=total or None)

    def advance(self, amount: int) -> None:
        if self._task is not None:
            self._bars.advance(self._task, amount)

    def done(self) -> None:
        if self._task is not None:
            task = self._bars.tasks[-1]
            self._bars.update(self._task, total=task.completed or 1, completed=task.completed or 1)
            self._task = None


def _print_result(result: Any, as_json: bool) -> None:
    """What the pass did, for a person: what it matched, the alerts it moved, how long it took.

    Quiet by default; `recon --verbose reconcile` adds the sample of pairs matched, each alert's
    fingerprint and each phase's time (what someone debugging a rule reads).
    """
    summary = result.as_dict()
    if as_json:
        say(json.dumps(summary, indent=2))
        return
    verbose = cli_options().verbose
    verb = "would match" if result.dry_run else "matched"
    rules = summary["matchedByRule"]
    say(f"{verb}: " + (", ".join(f"{rule} {n}" for rule, n in rules.items()) or "nothing"))
    if summary["transfersAttached"]:
        say(f"transfers attached to earlier matches: {summary['transfersAttached']}")
    if summary["ambiguities"]:
        say(f"ambiguous (left for a person): {summary['ambiguities']}")
    if verbose:
        for row in summary["sample"]:
            say(
                f"  {row['rule']:<22} posting {row['posting']} transfer {row['transfer']} "
                f"notification {row['notification']}"
            )
    opened = "would open" if result.dry_run else "opened"
    for label, key, changes in (
        (opened, "alertsOpened", result.alerts.opened),
        ("reopened", "alertsReopened", result.alerts.reopened),
        ("resolved", "alertsResolved", result.alerts.resolved),
    ):
        if summary[key]:
            kinds = Counter(change.kind for change in changes)
            named = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
            say(f"alerts {label}: {len(summary[key])}" + (f" ({named})" if named else ""))
            for fp in summary[key][:20] if verbose else ():
                say(f"  {fp}")
    if summary["alertsHeldBack"]:
        say(f"alerts held back by the per-pass cap: {summary['alertsHeldBack']}")
    say(
        f"took {took(summary['seconds'], each=verbose)}"
        + ("; nothing was written (dry run)" if result.dry_run else "")
    )


@click.command()
@click.option(
    "--dry-run", is_flag=True, help="Show what would be matched and alerted; write nothing."
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def reconcile(dry_run: bool, as_json: bool) -> None:
    """Run one reconciliation pass now: matching, drift rules, alerts."""
    from reconciliation import SilentProgress, run_pass

    settings = settings_or_exit()
    with existing_store(settings) as factory:
        if sys.stderr.isatty() and not as_json:
            with RichProgress() as bars:
                result = run_pass(factory, settings, dry_run=dry_run, progress=bars)
        else:
            result = run_pass(factory, settings, dry_run=dry_run, progress=SilentProgress())
    if result.skipped:
        fail("another reconciliation pass is running; try again when it has finished")
    _print_result(result, as_json)


REASON = click.option("--reason", required=True, help="Why; recorded with the match.")


def _items_named(params: dict[str, object]) -> int:
    postings = params.get("postings") or ()
    assert isinstance(postings, tuple)
    singles = ("posting", "transfer", "notification")
    return len(postings) + sum(params.get(k) is not None for k in singles)


class _NamesItems(click.Command):
    """A command that acts on a number of items (`match`: two or more, `accept`: exactly one),
    checked while its arguments are parsed: a wrong count is a usage error before any store is
    opened, and the check of the commands quoted in docs/ (tests/unit/test_doc_commands.py)
    sees it as click's parser does."""

    least: int = 1
    most: int | None = None
    refusal: str = ""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        named = _items_named(ctx.params)
        if not ctx.resilient_parsing and (
            named < self.least or (self.most is not None and named > self.most)
        ):
            raise click.UsageError(self.refusal, ctx)
        return rest


class _MatchCommand(_NamesItems):
    least = 2
    refusal = (
        "a match needs the item and at least one counterpart (--posting, --transfer, "
        "--notification); to close one item on its own, accept it without a counterpart: "
        "recon accept --posting|--transfer|--notification ID --reason ..."
    )


class _AcceptCommand(_NamesItems):
    least = most = 1
    refusal = "name exactly one item: --posting, --transfer or --notification"


@click.command(cls=_MatchCommand)
@click.option(
    "--posting", "postings", type=int, multiple=True, help="Posting id (repeat for legs)."
)
@click.option("--transfer", type=int, help="Transfer id.")
@click.option("--notification", type=int, help="Notification id.")
@BY
@REASON
def match(
    postings: tuple[int, ...],
    transfer: int | None,
    notification: int | None,
    by: str | None,
    reason: str,
) -> None:
    """Match an item with its counterparts by hand (ids are in the alert's evidence and in
    `recon report`); one item alone is `recon accept`."""
    from reconciliation.operator import actions

    rows = act(
        settings_or_exit(store_only=True),
        by,
        actions.match,
        reason,
        posting_ids=postings,
        transfer_id=transfer,
        notification_id=notification,
    )
    say("matched: " + ", ".join(f"match {r.id}" for r in rows))


@click.command(cls=_AcceptCommand)
@click.option("--posting", type=int, help="Posting id.")
@click.option("--transfer", type=int, help="Transfer id.")
@click.option("--notification", type=int, help="Notification id.")
@BY
@click.option("--reason", required=True, help="Why it needs no counterpart; recorded.")
def accept(
    posting: int | None,
    transfer: int | None,
    notification: int | None,
    by: str | None,
    reason: str,
) -> None:
    """Accept one item without a counterpart: a decision, counted apart from matches."""
    from reconciliation.operator import actions

    named = [
        (k, i)
        for k, i in (("posting", posting), ("transfer", transfer), ("notification", notification))
        if i is not None
    ]
    ((kind, item_id),) = named  # exactly one: _AcceptCommand checked
    settings = settings_or_exit(store_only=True)
    row = act(settings, by, actions.accept_without_counterpart, kind, item_id, reason)
    say(f"accepted without a counterpart: {kind} {item_id} (match {row.id})")


@click.command()
@click.argument("match_id", type=int)
@BY
@REASON
def unmatch(match_id: int, by: str | None, reason: str) -> None:
    """Take match MATCH_ID apart; its items become exceptions, each with an open alert, for a
    person to decide."""
    from reconciliation.operator import actions

    _, alerts = act(settings_or_exit(store_only=True), by, actions.unmatch, match_id, reason)
    say(f"unmatched: match {match_id}")
    for change in (*alerts.opened, *alerts.reopened):
        say(f"alert {change.alert_id} open: {change.subject}")


COMMANDS = [reconcile, match, accept, unmatch]
