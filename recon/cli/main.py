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
    """Add the commands each command module (`recon.cli.*_commands`) exports in `COMMANDS`."""
    import importlib
    import pkgutil

    from recon import cli as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name.endswith("_commands"):
            for command in importlib.import_module(f"recon.cli.{module.name}").COMMANDS:
                cli.add_command(command)


_register()


def main() -> None:
    cli()
