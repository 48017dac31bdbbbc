"""Settings as a person knows them: by the variable they set, with the defaults the code has.

`recon config check` names each setting by its variable; `.env.example` and the CLI's help
state the defaults; a command that only reads or migrates the store needs only the store's
variables. Each is checked against the code, so a default changed in one place shows up here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import fields
from pathlib import Path

import pytest

from foundation import Settings, load_settings
from foundation.settings import _GROUPS as GROUPS
from foundation.settings import VARIABLES
from foundation.settings._env import EnvReader

REPO = Path(__file__).resolve().parents[2]

#: Variables `.env.example` sets to an example rather than to the default (the sandbox's keys
#: and a placeholder token, which have no default).
EXAMPLES_NOT_DEFAULTS = frozenset(
    {"RECON_GATEWAY_API_KEY", "RECON_COMPANY_API_KEY", "RECON_ADMIN_TOKEN"}
)


class _Recording(Mapping[str, str]):
    """An environment that notes every name a group asks for."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.values = dict(values)
        self.asked: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.asked.add(name)
        return self.values[name]

    def get(self, name: str, default: object = None) -> object:  # type: ignore[override]
        self.asked.add(name)
        return self.values.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def test_every_setting_has_the_variable_its_group_reads(base_env: dict[str, str]) -> None:
    settings = load_settings(base_env)
    keys = {
        f"{group.name}.{f.name}"
        for group in fields(Settings)
        for f in fields(getattr(settings, group.name))
    }
    assert keys == set(VARIABLES)
    for name, group in GROUPS.items():
        env = _Recording(base_env)
        group.from_env(EnvReader(env))
        named = {v for k, v in VARIABLES.items() if k.startswith(f"{name}.")}
        assert named <= env.asked, (name, named - env.asked)


def _example_values() -> dict[str, str]:
    found = {}
    for line in (REPO / ".env.example").read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"([A-Z_]+)=(.*)", line.strip())
        if match:
            found[match.group(1)] = match.group(2)
    return found


def test_env_example_lists_every_variable_at_its_default(base_env: dict[str, str]) -> None:
    example = _example_values()
    assert set(VARIABLES.values()) <= set(example), set(VARIABLES.values()) - set(example)
    unset = {k: v for k, v in base_env.items() if k not in EXAMPLES_NOT_DEFAULTS}
    required = {k: v for k, v in base_env.items() if k in EXAMPLES_NOT_DEFAULTS}
    defaults = load_settings(required).by_variable()
    for name, value in example.items():
        if name in EXAMPLES_NOT_DEFAULTS or name not in VARIABLES.values():
            continue
        shown = load_settings({**required, name: value}).by_variable()[name]
        assert shown == defaults[name], (
            f".env.example: {name}={value}, the code's default is {defaults[name]}"
        )
    assert unset  # the isolation variables of base_env were really left out above


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recon", *args],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_config_check_names_each_setting_by_its_variable(base_env: dict[str, str]) -> None:
    result = _cli({**base_env, "RECON_SWEEP_SECONDS": "7"}, "config", "check")
    assert result.returncode == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines() if line.strip()][:-1]
    assert set(names) == set(VARIABLES.values())
    assert "store.database_url" not in result.stdout
    [sweep] = [
        line for line in result.stdout.splitlines() if line.startswith("RECON_SWEEP_SECONDS ")
    ]
    assert sweep.split()[1] == "7.0" and "(default)" not in sweep
    [poll] = [
        line
        for line in result.stdout.splitlines()
        if line.startswith("RECON_POLL_ACTIVITY_SECONDS ")
    ]
    assert poll.endswith("(default)")


@pytest.mark.parametrize("command", [["db", "upgrade"], ["report"], ["alerts", "list"]])
def test_store_commands_need_only_the_store(base_env: dict[str, str], command: list[str]) -> None:
    provider_free = {
        k: v
        for k, v in base_env.items()
        if k not in {"RECON_GATEWAY_API_KEY", "RECON_COMPANY_API_KEY", "RECON_ADMIN_TOKEN"}
    }
    upgrade = _cli(provider_free, "db", "upgrade")
    assert upgrade.returncode == 0, upgrade.stderr
    assert "upgraded to head" in upgrade.stdout or "already at head" in upgrade.stdout
    result = _cli(provider_free, *command)
    assert result.returncode == 0, result.stderr
    assert "RECON_" not in result.stderr


def test_commands_that_call_the_provider_still_need_its_keys(base_env: dict[str, str]) -> None:
    without = {k: v for k, v in base_env.items() if k != "RECON_GATEWAY_API_KEY"}
    result = _cli(without, "config", "check")
    assert result.returncode == 2
    assert "RECON_GATEWAY_API_KEY is missing" in result.stderr


def test_worker_and_scheduler_help_state_the_codes_defaults() -> None:
    from reconciliation.postings.activity import LEASE_SECONDS
    from workers import LOCK_SECONDS

    worker = _cli({}, "worker", "--help")
    assert f"(default {LEASE_SECONDS:g})" in " ".join(worker.stdout.split())
    scheduler = _cli({}, "scheduler", "--help")
    assert f"(default {LOCK_SECONDS:g})" in " ".join(scheduler.stdout.split())
