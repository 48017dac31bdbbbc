"""Every shell block in the README and in docs/deploy.md works as written, from a fresh clone.

The README's ```sh blocks are run in order, in one bash session (so an `export` in one block
holds for the next, as in a terminal), in a `git clone` of this checkout with the working
tree's uncommitted changes laid over it. The clone reuses this checkout's virtualenv through a
`.venv` symlink instead of installing one, but the virtualenv is *not* put on PATH: where a
block needs `recon` or `honcho` on PATH, the README itself must say how.

An HTML comment on the lines just before a block says how to treat it:

- `<!-- no-run: why -->`: never run (servers that run until stopped);
- `<!-- needs: postgres redis -->`: run only when those services answer (under CI=true they
  must); such blocks run in a clone of their own, so they must not rely on unmarked blocks;
- `<!-- skip-line: make test (why) -->`: run the block without the lines starting so
  (`make test` would run this very test).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import IN_CI, postgres_admin_url

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
#: The going-live guide: its blocks for the real provider are `no-run`; the others run here.
DEPLOY_GUIDE = REPO / "docs" / "deploy.md"

#: Services a block may declare it needs.
KNOWN_SERVICES = frozenset({"postgres", "redis"})

#: Where the README's Redis blocks expect Redis (their REDIS_URL says so too).
README_REDIS = ("127.0.0.1", 6379)

#: Variables of the outer environment a new user's terminal would not have.
SCRUBBED_PREFIXES = ("RECON_", "PG")
SCRUBBED = frozenset({"DATABASE_URL", "REDIS_URL", "PORT", "VIRTUAL_ENV", "PYTHONPATH"})

#: Upper bound for one whole run (two demos at most, each well under a minute when idle).
RUN_TIMEOUT_SECONDS = 240

_MARKER = re.compile(r"^<!--\s*(no-run|needs|skip-line)\s*:?\s*(.*?)\s*-->$")


@dataclass(frozen=True)
class ShellBlock:
    """One ```sh block of the README and what its markers say."""

    line: int
    code: str
    runs: bool
    needs: frozenset[str]
    skipped_prefixes: tuple[str, ...]

    def script(self) -> str:
        kept = [
            line
            for line in self.code.splitlines()
            if not line.strip().startswith(self.skipped_prefixes or ("\0",))
        ]
        return "\n".join(kept)


def readme_blocks(text: str) -> list[ShellBlock]:
    """The README's ```sh blocks with the markers on the lines right above each."""
    lines = text.splitlines()
    blocks: list[ShellBlock] = []
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```sh":
            index += 1
            continue
        markers = []
        above = index - 1
        while above >= 0 and (found := _MARKER.match(lines[above].strip())):
            markers.append((found.group(1), found.group(2)))
            above -= 1
        end = lines.index("```", index + 1)
        needs = frozenset(
            word for kind, value in markers if kind == "needs" for word in value.split()
        )
        skipped = tuple(
            value.split("(")[0].strip() for kind, value in markers if kind == "skip-line"
        )
        blocks.append(
            ShellBlock(
                line=index + 1,
                code="\n".join(lines[index + 1 : end]),
                runs=not any(kind == "no-run" for kind, _ in markers),
                needs=needs,
                skipped_prefixes=skipped,
            )
        )
        index = end + 1
    return blocks


def test_readme_blocks_are_all_marked_sensibly() -> None:
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    for block in blocks:
        assert block.needs <= KNOWN_SERVICES, (block.line, block.needs)
        assert block.code.strip(), f"README.md:{block.line}: empty block"
        for prefix in block.skipped_prefixes:
            assert any(line.startswith(prefix) for line in block.code.splitlines()), prefix
    assert any(b.runs and not b.needs for b in blocks), "nothing would run on a laptop"


# -- running them -------------------------------------------------------------------------------


def _fresh_clone(destination: Path) -> Path:
    """A clone of this checkout plus its uncommitted changes, sharing its virtualenv."""
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(destination)], check=True
    )
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--modified", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        target = destination / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
        elif target.exists() and not source.exists():
            target.unlink()
    (destination / ".venv").symlink_to(REPO / ".venv", target_is_directory=True)
    # `make` would reinstall the shared virtualenv because the clone's files are newer than
    # its install stamp; date them back so it sees nothing to do.
    for name in ("pyproject.toml", "constraints.txt"):
        os.utime(destination / name, (0, 0))
    return destination


def _terminal_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment of a new user's terminal: no recon settings, no virtualenv on PATH."""
    venv_bin = str(REPO / ".venv" / "bin")
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in SCRUBBED and not name.startswith(SCRUBBED_PREFIXES)
    }
    env["PATH"] = os.pathsep.join(
        part for part in env.get("PATH", "").split(os.pathsep) if part and part != venv_bin
    )
    env.update(extra)
    return env


def _run_blocks(
    clone: Path, blocks: Iterable[ShellBlock], env: dict[str, str], doc: str = "README.md"
) -> str:
    parts = ["set -e -o pipefail"]
    for block in blocks:
        parts += [f"echo '>>> {doc}:{block.line}' >&2", block.script()]
    script = "\n".join(parts) + "\n"
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
        check=False,
    )
    assert result.returncode == 0, (
        f"a {doc} block failed (exit {result.returncode}); the last '>>>' names it\n"
        f"--- stdout (end)\n{result.stdout[-4000:]}\n--- stderr (end)\n{result.stderr[-4000:]}"
    )
    return result.stdout + result.stderr


@pytest.mark.slow
def test_readme_works_on_a_laptop(tmp_path: Path) -> None:
    """The blocks that need no service, as a new user without PostgreSQL or Redis runs them."""
    if not (REPO / ".venv" / ".installed-stamp").exists():
        pytest.skip("the checkout's .venv is not installed by make: run `make venv` first")
    blocks = [
        b for b in readme_blocks(README.read_text(encoding="utf-8")) if b.runs and not b.needs
    ]
    clone = _fresh_clone(tmp_path / "clone")
    output = _run_blocks(clone, blocks, _terminal_env({}))
    assert "recon found exactly the injected faults" in output
    # What the README promises those blocks leave behind:
    assert (clone / ".recon" / "demo" / "env").stat().st_mode & 0o777 == 0o600
    # The CLI, reading the demo's settings, sees the store exactly as the demo left it.
    assert "would match: nothing" in output
    assert not re.search(r"^alerts (would open|reopened|resolved): ", output, re.MULTILINE)
    assert "upgraded to head" in output
    assert "upstream.request" not in output
    assert "demo_commands.py:" not in output


def _postgres_env() -> dict[str, str] | None:
    url = postgres_admin_url()
    if url is None:
        return None
    parts = urlsplit(url.replace("+psycopg", ""))
    env = {"PGHOST": parts.hostname or "127.0.0.1", "PGPORT": str(parts.port or 5432)}
    if parts.username:
        env["PGUSER"] = parts.username
    if parts.password:
        env["PGPASSWORD"] = parts.password
    probe = subprocess.run(
        ["psql", "-d", "postgres", "-Atc", "select 1"],
        env=_terminal_env(env),
        capture_output=True,
        text=True,
        check=False,
    )
    return env if probe.returncode == 0 else None


def _redis_answers() -> bool:
    import redis

    host, port = README_REDIS
    try:
        return bool(redis.Redis(host=host, port=port, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.redis
def test_readme_works_with_postgres_and_redis(tmp_path: Path) -> None:
    """The blocks marked `needs: postgres redis`, when both answer (and always under CI)."""
    blocks = [b for b in readme_blocks(README.read_text(encoding="utf-8")) if b.runs and b.needs]
    assert blocks, "the README shows no PostgreSQL + Redis run"
    pg_env = _postgres_env()
    missing = [
        n for n, ok in (("PostgreSQL", pg_env is not None), ("Redis", _redis_answers())) if not ok
    ]
    if missing:
        reason = f"{' and '.join(missing)} unavailable for the README's service blocks"
        if IN_CI:
            pytest.fail(f"{reason} under CI=true", pytrace=False)
        pytest.skip(reason)
    assert pg_env is not None
    clone = _fresh_clone(tmp_path / "clone")
    env = _terminal_env(pg_env)
    try:
        output = _run_blocks(clone, blocks, env)
    finally:
        subprocess.run(
            ["dropdb", "--if-exists", "--force", "recon_demo"],
            env=env,
            capture_output=True,
            check=False,
        )
    assert "web, worker and scheduler on Redis" in output
    assert "recon found exactly the injected faults" in output


# -- docs/deploy.md ------------------------------------------------------------------------------


def test_deploy_guide_blocks_are_all_marked_sensibly() -> None:
    blocks = readme_blocks(DEPLOY_GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    for block in blocks:
        assert block.needs <= KNOWN_SERVICES, (block.line, block.needs)
        assert block.code.strip(), f"docs/deploy.md:{block.line}: empty block"
    runnable = [b for b in blocks if b.runs]
    assert any(not b.needs for b in runnable), "nothing in the guide runs on a laptop"
    assert any("pg_restore" in b.code for b in runnable), "the restore is not rehearsed"


@pytest.mark.slow
def test_deploy_guide_laptop_blocks_run(tmp_path: Path) -> None:
    """The guide's blocks that need no service: recon's own secrets are made as it says."""
    if not (REPO / ".venv" / ".installed-stamp").exists():
        pytest.skip("the checkout's .venv is not installed by make: run `make venv` first")
    blocks = [
        b for b in readme_blocks(DEPLOY_GUIDE.read_text(encoding="utf-8")) if b.runs and not b.needs
    ]
    clone = _fresh_clone(tmp_path / "clone")
    output = _run_blocks(clone, blocks, _terminal_env({}), "docs/deploy.md")
    from cryptography.fernet import Fernet

    key, token = [line for line in output.splitlines() if not line.startswith(">>>")][:2]
    Fernet(key.encode())  # a usable RECON_SECRET_KEY
    assert len(token) >= 32


@pytest.mark.slow
@pytest.mark.postgres
def test_deploy_guide_restore_rehearsal_runs(tmp_path: Path) -> None:
    """A backup of a running store, restored into a fresh database, passes `recon audit` and
    `recon rebuild --dry-run`: the guide's rehearsal, run as written."""
    if not (REPO / ".venv" / ".installed-stamp").exists():
        pytest.skip("the checkout's .venv is not installed by make: run `make venv` first")
    blocks = [
        b for b in readme_blocks(DEPLOY_GUIDE.read_text(encoding="utf-8")) if b.runs and b.needs
    ]
    assert blocks and all(b.needs == {"postgres"} for b in blocks)
    pg_env = _postgres_env()
    if pg_env is None:
        if IN_CI:
            pytest.fail("PostgreSQL unavailable for the guide's rehearsal under CI=true")
        pytest.skip("PostgreSQL unavailable for the guide's rehearsal")
    clone = _fresh_clone(tmp_path / "clone")
    env = _terminal_env(pg_env)
    try:
        output = _run_blocks(clone, blocks, env, "docs/deploy.md")
    finally:
        for name in ("recon_rehearsal", "recon_restored"):
            subprocess.run(
                ["dropdb", "--if-exists", "--force", name],
                env=env,
                capture_output=True,
                check=False,
            )
    assert "the rebuilt state equals the live one" in output
    assert re.search(r"^audit \d+: clean, ", output, re.MULTILINE), output[-3000:]
