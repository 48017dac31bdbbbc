"""The settings a demo ran with, left behind so the CLI can look at the demo's store afterwards.

The demo shortens every schedule and grace period; a `recon reconcile --dry-run` run later with
the defaults would judge the same store by an hour-long finality deadline and report changes
the demo never saw. So the demo writes the exact settings of its processes to one file, and
`recon --env-file <file> <command>` makes the CLI agree with it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from recon.demo.processes import private_folder

#: The file's name inside the demo's state folder (`.recon/demo/env` by default).
DEMO_ENV_FILE_NAME: Final = "env"

#: Variables recon reads that do not start with RECON_.
PLAIN_VARIABLES: Final = ("DATABASE_URL", "REDIS_URL", "PORT")

#: Left out on purpose: the demo's processes log JSON into files, while a person reading the
#: CLI at a terminal wants the readable default. Nothing about reconciliation depends on them.
LEFT_OUT: Final = frozenset({"RECON_LOG_FORMAT"})

#: Owner read and write only: the file holds the demo's credentials and admin token.
FILE_MODE: Final = 0o600


def demo_env_path(state_dir: Path) -> Path:
    return state_dir / "demo" / DEMO_ENV_FILE_NAME


def recon_variables(env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` that recon reads, with REDIS_URL pinned even when unset.

    Unset REDIS_URL is written as empty (which recon reads as unset), so a REDIS_URL the
    operator's shell exports later cannot turn the embedded demo's settings distributed.
    """
    chosen = {
        name: value
        for name, value in env.items()
        if (name.startswith("RECON_") or name in PLAIN_VARIABLES) and name not in LEFT_OUT
    }
    chosen.setdefault("REDIS_URL", "")
    return dict(sorted(chosen.items()))


def write_demo_env(path: Path, env: Mapping[str, str]) -> None:
    """Write `NAME=value` lines, readable by `recon --env-file` and honcho, mode 0600."""
    lines = [
        "# The settings `recon demo` ran with, secrets included: keep this file private.",
        "# Use them with: recon --env-file " + str(path) + " <command>",
    ]
    for name, value in recon_variables(env).items():
        if "\n" in value:
            raise ValueError(f"{name} holds a line break; it cannot be written to {path}")
        quoted = f"'{value}'" if any(c.isspace() or c in "'\"#" for c in value) else value
        lines.append(f"{name}={quoted}")
    private_folder(path.parent)
    # Created with the private mode (never briefly readable by others), then forced to it in
    # case the file already existed with a looser one.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), FILE_MODE)
        handle.write("\n".join(lines) + "\n")


def shell_hint(path: Path) -> str:
    """The one command line to run next, written as the operator can paste it from here."""
    recon = Path(sys.executable).parent / "recon"
    return f"{_relative(recon)} --env-file {_relative(path)} report"


def _relative(path: Path) -> str:
    # absolute, not resolve: a symlinked .venv should still print as .venv/bin/recon.
    absolute = path.absolute()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)
