"""The mistakes of a new user's first hour: each ends in one line that names the cause.

Every test runs the real `recon` command in a subprocess, the way a person runs it from a
terminal: a configuration with several problems, a settings file, a port already in use, a
Redis that does not answer, a store that is not there.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from recon.demo.env_file import write_demo_env

#: A start-up check answers before anything starts (one line, nothing written, nothing else
#: logged); a command that hangs instead is stopped after this long and fails its test.
PROMPT_SECONDS = 30.0


def recon(
    env: dict[str, str], *args: str, cwd: Path | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    inherited = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    full = {**inherited, **env}
    return subprocess.run(
        [sys.executable, "-m", "recon", *args],
        env=full,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def shown_settings(stdout: str) -> dict[str, str]:
    """`recon config check`'s `VARIABLE  value` lines as a mapping (a default is marked so)."""
    pairs = (line.split(None, 1) for line in stdout.splitlines() if line[:1].isalpha())
    return {
        pair[0]: pair[1].removesuffix("(default)").strip()
        for pair in pairs
        if len(pair) == 2 and pair[0].replace("_", "").isupper()
    }


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a command that must fail with one line, and nothing else."""
    assert result.returncode != 0, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == "", result.stdout
    return lines[0]


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A local port where nothing listens: bound (so nobody else takes it) but never listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


# -- configuration --------------------------------------------------------------------------------


def test_config_check_lists_every_problem_at_once(base_env: dict[str, str]) -> None:
    env = {
        k: v for k, v in base_env.items() if k not in ("RECON_GATEWAY_API_KEY", "RECON_ADMIN_TOKEN")
    }
    env |= {
        "PORT": "eighty",
        "RECON_SIGNATURE_SCHEME": "md5",
        "RECON_ALERT_WEBHOOK_SECRET": "not-a-whsec",
        "RECON_TRANSFER_BACKOFF_CAP_SECONDS": "1",
        "RECON_POLL_ACTIVITY_SECONDS": "0",
    }
    result = recon(env, "config", "check")
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    expected_starts = [
        "recon: RECON_GATEWAY_API_KEY is missing",
        "recon: PORT='eighty' is not valid",
        "recon: RECON_ADMIN_TOKEN is missing",
        "recon: RECON_SIGNATURE_SCHEME='md5' is not valid",
        "recon: RECON_POLL_ACTIVITY_SECONDS='0' is not valid",
        "recon: RECON_TRANSFER_BACKOFF_CAP_SECONDS=1 is not valid",
        "recon: RECON_ALERT_WEBHOOK_SECRET is not valid",
    ]
    for start in expected_starts:
        assert sum(line.startswith(start) for line in lines) == 1, (start, lines)
    assert len(lines) == len(expected_starts)


def test_env_example_lists_every_variable_and_runs_on_a_laptop(tmp_path: Path) -> None:
    """`.env.example` as shipped is valid, embedded (no PostgreSQL, no Redis) and complete."""
    from foundation import load_settings

    example = Path(__file__).resolve().parents[2] / ".env.example"
    result = recon({}, "--env-file", str(example), "config", "check", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "mode: embedded" in result.stdout
    assert shown_settings(result.stdout)["REDIS_URL"] == "(unset)"

    class Recording(dict[str, str]):
        def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
            read.add(key)
            return super().get(key, default)

    read: set[str] = set()
    load_settings(
        Recording(
            RECON_GATEWAY_API_KEY="ak_test_x", RECON_COMPANY_API_KEY="c", RECON_ADMIN_TOKEN="t"
        )
    )
    listed = {
        line.split("=", 1)[0]
        for line in example.read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert read - listed == set(), "variables recon reads but .env.example does not list"


def test_env_file_is_read_before_the_settings_and_wins(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    env_file = tmp_path / "settings.env"
    env_file.write_text("# comment\n\nexport RECON_FINALITY_DEADLINE_SECONDS=12\nPORT='8123'\n")
    result = recon({**base_env, "PORT": "9000"}, "--env-file", str(env_file), "config", "check")
    assert result.returncode == 0, result.stderr
    shown = shown_settings(result.stdout)
    assert shown["RECON_FINALITY_DEADLINE_SECONDS"] == "12"
    assert shown["PORT"] == "8123"


def test_env_file_with_a_malformed_line_names_it(base_env: dict[str, str], tmp_path: Path) -> None:
    env_file = tmp_path / "bad.env"
    env_file.write_text("PORT=1\nthis is not a setting\n")
    line = one_line(recon(base_env, "--env-file", str(env_file), "config", "check"))
    assert line.startswith(f"recon: {env_file}:2: expected NAME=value")


def test_demo_settings_file_is_private_and_read_back_exactly(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "state" / "demo" / "env"
    demo_env = {
        **base_env,
        "RECON_FINALITY_DEADLINE_SECONDS": "12",
        "RECON_SIGNATURE_HEADER": "X-Sig #1 'quoted'",
        "RECON_LOG_FORMAT": "json",
        "HOME": "/not/a/recon/variable",
    }
    write_demo_env(path, demo_env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    assert "HOME=" not in text and "RECON_LOG_FORMAT" not in text
    assert base_env["RECON_GATEWAY_API_KEY"] in text  # the demo's own secrets are kept, privately
    # REDIS_URL is pinned unset: a shell's REDIS_URL cannot make the embedded demo distributed.
    result = recon(
        {"REDIS_URL": "redis://127.0.0.1:1/0"}, "--env-file", str(path), "config", "check"
    )
    assert result.returncode == 0, result.stderr
    assert "mode: embedded" in result.stdout
    shown = shown_settings(result.stdout)
    assert shown["RECON_FINALITY_DEADLINE_SECONDS"] == "12"
    assert shown["RECON_SIGNATURE_HEADER"] == "X-Sig #1 'quoted'"


# -- a port already in use --------------------------------------------------------------------------


def test_web_on_a_port_in_use_says_so_at_once(base_env: dict[str, str], tmp_path: Path) -> None:
    # Without RECON_SECRET_KEY the web process would write a key file as it starts up.
    env = {k: v for k, v in base_env.items() if k != "RECON_SECRET_KEY"}
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = recon(env, "web", "--port", str(port), timeout=PROMPT_SECONDS)
    line = one_line(result)
    assert line == (
        f"recon: port {port} on 127.0.0.1 is already in use: stop the process listening there, "
        "or choose another port with --port (or PORT)"
    )
    # Nothing started before the check: no workers, no registration, no key file written.
    assert not (Path(base_env["RECON_STATE_DIR"]) / "secret.key").exists()


# -- Redis that does not answer ---------------------------------------------------------------------


@pytest.mark.parametrize("command", [["web"], ["worker"], ["scheduler"]])
def test_every_process_says_redis_does_not_answer(
    base_env: dict[str, str], refused_port: int, command: list[str]
) -> None:
    url = f"redis://:redis-pa55word@127.0.0.1:{refused_port}/0"
    result = recon({**base_env, "REDIS_URL": url}, *command, timeout=PROMPT_SECONDS)
    line = one_line(result)
    assert line.startswith(
        f"recon: Redis at redis://:***@127.0.0.1:{refused_port}/0 does not answer"
    )
    assert "redis-pa55word" not in result.stderr


def test_demo_says_redis_does_not_answer_before_starting_anything(
    base_env: dict[str, str], refused_port: int, tmp_path: Path
) -> None:
    env = {**base_env, "REDIS_URL": f"redis://127.0.0.1:{refused_port}/0"}
    result = recon(env, "demo", "--report", str(tmp_path / "r.html"), timeout=PROMPT_SECONDS)
    assert result.returncode == 1
    assert f"Redis at redis://127.0.0.1:{refused_port}/0 does not answer" in result.stderr
    assert not (Path(base_env["RECON_STATE_DIR"]) / "demo" / "logs").exists()


# -- a store that is not there ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["report"], ["alerts", "list"], ["reconcile", "--dry-run"], ["webhooks", "list"]],
)
def test_read_only_commands_never_create_a_store(
    base_env: dict[str, str], tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "nonexistent" / "dir" / "x.db"
    env = {**base_env, "DATABASE_URL": f"sqlite:///{missing}"}
    line = one_line(recon(env, *command))
    assert line == (
        f"recon: there is no store at {missing}: create it with `recon db upgrade`, or point "
        "DATABASE_URL (or --env-file) at an existing store"
    )
    assert not missing.parent.exists()


def test_an_empty_store_is_named_and_the_demo_store_suggested(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    line = one_line(recon({**base_env, "DATABASE_URL": f"sqlite:///{empty}"}, "report"))
    assert line == (
        f"recon: the store at sqlite:///{empty} has no tables yet: create them with "
        "`recon db upgrade`"
    )
    # After `make demo`, a plain `recon report` points at the demo's settings file.
    state = Path(base_env["RECON_STATE_DIR"])
    write_demo_env(state / "demo" / "env", base_env)
    env = {**base_env, "DATABASE_URL": f"sqlite:///{tmp_path / 'nothing-here.db'}"}
    line = one_line(recon(env, "report"))
    assert line.endswith(
        f"to look at the demo's store: recon --env-file {state / 'demo' / 'env'} <command>"
    )


# -- `make test` without PostgreSQL or Redis ---------------------------------------------------------


def test_missing_services_are_summarised_once_per_reason(tmp_path: Path) -> None:
    """Without PostgreSQL and Redis, each skip reason gets one summary line with its count."""
    # Several tests per reason, on different lines: pytest alone would give each its own line.
    (tmp_path / "test_needs_services.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('n', range(3))\n"
        "def test_on_postgres(n, postgres_template_url):\n    pass\n\n"
        "def test_more_on_postgres(postgres_template_url):\n    pass\n\n"
        "def test_still_more_on_postgres(postgres_template_url):\n    pass\n\n"
        "def test_on_redis(redis_url):\n    pass\n\n"
        "@pytest.mark.parametrize('n', range(2))\n"
        "def test_more_on_redis(n, redis_url):\n    pass\n\n"
        "def test_elsewhere():\n    pytest.skip('not on this machine')\n\n"
        "def test_also_elsewhere():\n    pytest.skip('not on this machine')\n"
    )
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("CI", "DATABASE_URL", "RECON_TEST_POSTGRES_URL")
    }
    env["REDIS_URL"] = "redis://127.0.0.1:1/0"
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"),
            *("-q", "-ra", str(tmp_path / "test_needs_services.py")),
        ],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 3, result.stdout
    assert any(
        line.startswith("SKIPPED [5] ") and "PostgreSQL unavailable" in line for line in skipped
    )
    assert any(line.startswith("SKIPPED [3] ") and "Redis unavailable" in line for line in skipped)
    assert any(
        line.startswith("SKIPPED [2] ") and "not on this machine" in line for line in skipped
    )


# -- commands that destroy, processes that would serve nothing ---------------------------------------


def _tables(database_url: str) -> set[str]:
    from sqlalchemy import inspect

    from reconciliation.store.db import make_engine

    engine = make_engine(database_url, must_exist=True)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_downgrade_names_its_revision_and_base_needs_confirming(
    base_env: dict[str, str],
) -> None:
    url = base_env["DATABASE_URL"]
    assert recon(base_env, "db", "upgrade").returncode == 0
    assert "alerts" in _tables(url)

    bare = recon(base_env, "db", "downgrade")
    assert bare.returncode == 2 and "--revision" in bare.stderr
    assert "alerts" in _tables(url), "a downgrade without a revision dropped the store"

    line = one_line(recon(base_env, "db", "downgrade", "--revision", "base"))
    assert line.startswith("recon: --revision base drops every table of the store at ")
    assert line.endswith("add --drop-everything if that is what you want")
    assert "alerts" in _tables(url)

    line = one_line(recon(base_env, "db", "downgrade", "--revision", "-1"))
    assert line.startswith("recon: no revision '-1': name one of ")
    assert line.endswith(", 0001, base") or line.endswith(" 0001, base")
    assert "alerts" in _tables(url)

    done = recon(base_env, "db", "downgrade", "--revision", "base", "--drop-everything")
    assert done.returncode == 0, done.stderr
    assert "downgraded to base" in done.stdout
    assert _tables(url) <= {"alembic_version"}
    # A store taken down to base says what the README says, not "database unavailable".
    line = one_line(recon(base_env, "report"))
    assert line.startswith("recon: the store at ") and line.endswith(
        "has no tables yet: create them with `recon db upgrade`"
    ), line


@pytest.mark.parametrize("command", [["web"], ["worker"]])
def test_a_process_refuses_a_configured_store_that_is_not_there(
    base_env: dict[str, str], tmp_path: Path, command: list[str]
) -> None:
    missing = tmp_path / "nowhere" / "recon.db"
    env = {**base_env, "DATABASE_URL": f"sqlite:///{missing}"}
    line = one_line(recon(env, *command, timeout=PROMPT_SECONDS))
    assert line.startswith(
        f"recon: there is no store at {missing}: create it with `recon db upgrade`"
    )
    assert not missing.parent.exists(), "an empty store was created on the way"


@pytest.mark.parametrize("command", [["web"], ["worker"]])
def test_a_process_refuses_a_configured_store_without_tables(
    base_env: dict[str, str], tmp_path: Path, command: list[str]
) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    line = one_line(recon({**base_env, "DATABASE_URL": f"sqlite:///{empty}"}, *command))
    assert line == (
        f"recon: the store at sqlite:///{empty} has no tables yet: create them with "
        "`recon db upgrade`"
    )


@pytest.mark.redis
@pytest.mark.parametrize("command", [["web"], ["worker"], ["scheduler"]])
def test_every_process_refuses_a_database_that_does_not_answer(
    base_env: dict[str, str], refused_port: int, redis_url: str, command: list[str]
) -> None:
    url = f"postgresql://recon:pg-pa55word@127.0.0.1:{refused_port}/recon"
    env = {**base_env, "DATABASE_URL": url, "REDIS_URL": redis_url}
    line = one_line(recon(env, *command, timeout=PROMPT_SECONDS))
    assert line.startswith(
        f"recon: database unavailable at postgresql+psycopg://recon:***@127.0.0.1:{refused_port}/"
    )
    assert "pg-pa55word" not in line


def test_the_embedded_default_web_starts_from_nothing(
    base_env: dict[str, str], tmp_path: Path
) -> None:
    """No DATABASE_URL on a fresh laptop: `recon web` makes and migrates its own SQLite store."""
    import httpx

    from tests.integration.app.receiver_helpers import free_port, wait_for

    state = tmp_path / "fresh"
    env = {k: v for k, v in base_env.items() if k not in ("DATABASE_URL", "RECON_SECRET_KEY")}
    env["RECON_STATE_DIR"] = str(state)
    port = free_port()
    inherited = {name: os.environ[name] for name in ("PATH", "HOME") if name in os.environ}
    process = subprocess.Popen(
        [sys.executable, "-m", "recon", "web", "--no-register", "--port", str(port)],
        env={**inherited, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def ready() -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(lambda: ready() or process.poll() is not None, 60, "recon web to answer")
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
    finally:
        process.terminate()
        process.wait(30)
    assert "alerts" in _tables(f"sqlite:///{state / 'recon.db'}")
