"""The `recon` command: one entry point for every process and operator task.

Each command group lives in its own module and is registered below. Configuration errors and an
unreachable database end the command with one line on stderr and exit status 2, never with a
traceback: the person reading it at 3 a.m. needs the variable name, not a stack.

Two options belong to the group and so to every command: `--env-file` (settings from a file,
such as the one `recon demo` leaves behind) and `--verbose` (logs beyond warnings, on stderr).
"""

from __future__ import annotations

from pathlib import Path

import click

from recon.cli.startup import CliOptions, apply_env_file


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--env-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Read NAME=value lines from this file into the environment first (the file wins). "
    "After `make demo`: --env-file .recon/demo/env.",
)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Log at RECON_LOG_LEVEL (stderr) instead of warnings and errors only.",
)
@click.pass_context
def cli(ctx: click.Context, env_file: Path | None, verbose: bool) -> None:
    """recon: webhook receiver and reconciliation worker for the provider's gateway and company API."""
    from foundation import configure_logging

    if env_file is not None:
        apply_env_file(env_file)
    ctx.obj = CliOptions(verbose=verbose)
    # Until a command reads its settings, anything logged goes to stderr, never into the
    # command's output (an unconfigured structlog would print to stdout).
    configure_logging("auto", "info" if verbose else "warning")


def _register() -> None:
    from recon.cli import config_commands, db_commands

    cli.add_command(db_commands.db)
    cli.add_command(config_commands.config)
    # Later command groups register here, one line each.
    for name in (
        "recon.cli.sandbox_commands",
        "recon.cli.provider_commands",
        "recon.cli.transfer_commands",
        "recon.cli.endpoint_commands",
        "recon.cli.web_commands",
        "recon.cli.webhook_commands",
        "recon.cli.delivery_commands",
        "recon.cli.worker_commands",
        "recon.cli.reconcile_commands",
        "recon.cli.prune_commands",
        "recon.cli.alert_commands",
        "recon.cli.report_commands",
        "recon.cli.audit_commands",
        "recon.cli.demo_commands",
        "recon.cli.console_commands",
    ):
        _add_module_commands(name)


def _add_module_commands(module_name: str) -> None:
    """Add every click command a module exports in `COMMANDS`; a module not written yet is skipped."""
    import importlib
    import importlib.util

    if importlib.util.find_spec(module_name) is None:
        return
    module = importlib.import_module(module_name)
    for command in getattr(module, "COMMANDS", ()):
        cli.add_command(command)


_register()


def main() -> None:
    cli()
