"""Run the whole of recon against the sandbox, drive a scenario, and check the report.

The demo starts real processes (the sandbox, `recon web`, and with Redis `recon worker` and
`recon scheduler`) exactly as the Procfile would, so what it proves is what production runs.
Schedules and grace periods are shortened so that a business day fits in a minute.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.report_formats import render
from foundation import unit_exponents as parse_unit_exponents
from foundation import use_unit_exponents
from recon.demo.env_file import demo_env_path, write_demo_env
from recon.demo.processes import (
    ProcessGroup,
    dotenv_overrides,
    free_port,
    honcho_argv,
    private_folder,
    recon_argv,
    wait_until_ready,
)
from recon.demo.scenario import (
    EXPECTED_ALERT_KINDS,
    UNIT_EXPONENTS,
    SandboxControl,
    ScenarioRecord,
    run_scenario,
)
from reconciliation.reports import Report, ReportWindow, build_report
from reconciliation.store import (
    Alert,
    Delivery,
    Transfer,
    make_engine,
    make_session_factory,
    utcnow,
)
from reconciliation.transfers import StoreIdempotencyKeys
from upstream import GatewayClient

#: Schedules and grace periods of the demo's recon processes: a business day in a minute.
DEMO_TIMINGS: Final[dict[str, str]] = {
    "RECON_POLL_ACTIVITY_SECONDS": "1",
    # Quiet holdings back off, but never past this: the dropped webhook's posting is found by
    # a silent read within seconds, as the demo's minute needs.
    "RECON_MAX_STALENESS_SECONDS": "5",
    "RECON_POLL_TRANSFERS_SECONDS": "1",
    "RECON_SNAPSHOT_BALANCES_SECONDS": "2",
    "RECON_DISCOVER_HOLDINGS_SECONDS": "2",
    "RECON_CHECK_SUBSCRIPTION_SECONDS": "5",
    "RECON_SWEEP_SECONDS": "2",
    "RECON_RECONCILE_SECONDS": "2",
    "RECON_DELIVERY_GRACE_SECONDS": "3",
    "RECON_NOTIFICATION_GRACE_SECONDS": "8",
    "RECON_PROJECTION_GRACE_SECONDS": "5",
    "RECON_FINALITY_DEADLINE_SECONDS": "12",
}

#: How long the demo waits for reconciliation to settle before calling it a failure.
SETTLE_TIMEOUT_SECONDS: Final = 90.0


@dataclass(frozen=True)
class DemoPlan:
    """Where everything runs and what it is called."""

    env: dict[str, str]
    sandbox_url: str
    web_url: str
    database_url: str
    distributed: bool
    log_dir: Path
    report_path: Path
    env_file: Path
    procfile: Path | None = None


def expected_alerts(record: ScenarioRecord) -> Counter[str]:
    """How many open alerts of each kind the injected faults must leave: one per fault."""
    return Counter(EXPECTED_ALERT_KINDS[fault] for fault in record.injected)


@dataclass(frozen=True)
class DemoOutcome:
    """The scenario, the report, and the open alerts counted by kind against the faults.

    Counted, not compared as sets: a second alert of an injected kind (five alerts for four
    faults) is as wrong as a kind nobody injected.
    """

    record: ScenarioRecord
    report: Report
    open_kinds: dict[str, int]
    text_report: str

    @property
    def expected(self) -> Counter[str]:
        return expected_alerts(self.record)

    @property
    def missing(self) -> list[str]:
        """Kinds with fewer open alerts than faults injected, as `kind: 0 open for 1 fault`."""
        return [
            _shortfall(kind, self.open_kinds.get(kind, 0), want)
            for kind, want in sorted(self.expected.items())
            if self.open_kinds.get(kind, 0) < want
        ]

    @property
    def unexpected(self) -> list[str]:
        """Kinds with more open alerts than faults injected (none injected included)."""
        return [
            _shortfall(kind, found, self.expected.get(kind, 0))
            for kind, found in sorted(self.open_kinds.items())
            if found > self.expected.get(kind, 0)
        ]

    @property
    def ok(self) -> bool:
        return not self.missing and not self.unexpected

    def tally(self) -> str:
        """`4 open alerts for 4 injected faults (amount_mismatch 1, ...)`."""
        found = sum(self.open_kinds.values())
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.open_kinds.items())) or "none"
        return f"{found} open alerts for {len(self.record.injected)} injected faults ({kinds})"


def _shortfall(kind: str, found: int, want: int) -> str:
    return f"{kind}: {found} open for {want} {'fault' if want == 1 else 'faults'} injected"


def plan_demo(
    environ: Mapping[str, str], state_dir: Path, report_path: Path, procfile: Path | None = None
) -> DemoPlan:
    """Ports, a fresh store, and the environment every demo process gets.

    Paths are absolute, so the settings file the demo leaves behind works from any folder.
    """
    state_dir = state_dir.absolute()
    sandbox_port, web_port = free_port(), free_port()
    sandbox_url = f"http://127.0.0.1:{sandbox_port}"
    web_url = f"http://127.0.0.1:{web_port}"
    database_url = environ.get("DATABASE_URL", "")
    if not database_url:
        demo_db = state_dir / "demo" / "recon-demo.db"
        private_folder(demo_db.parent)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{demo_db}{suffix}").unlink(missing_ok=True)
        database_url = f"sqlite:///{demo_db}"
    env = {
        **environ,
        **DEMO_TIMINGS,
        "RECON_UNIT_EXPONENTS": UNIT_EXPONENTS,
        "DATABASE_URL": database_url,
        "RECON_STATE_DIR": str(state_dir),
        "RECON_GATEWAY_URL": sandbox_url,
        "RECON_COMPANY_URL": sandbox_url,
        "RECON_PUBLIC_URL": web_url,
        "PORT": str(web_port),
        "RECON_GATEWAY_API_KEY": environ.get("RECON_GATEWAY_API_KEY", "ak_test_recon"),
        "RECON_COMPANY_API_KEY": environ.get("RECON_COMPANY_API_KEY", "ck_test_recon"),
        "RECON_ADMIN_TOKEN": environ.get("RECON_ADMIN_TOKEN", "demo-admin-token-change-me"),
        "RECON_LOG_FORMAT": "json",
    }
    if not environ.get("RECON_SECRET_KEY") and not database_url.startswith("sqlite"):
        # A shared store needs one key for all the demo's processes (foundation.secret_key).
        from cryptography.fernet import Fernet

        env["RECON_SECRET_KEY"] = Fernet.generate_key().decode()
    return DemoPlan(
        env=env,
        sandbox_url=sandbox_url,
        web_url=web_url,
        database_url=database_url,
        distributed=bool(environ.get("REDIS_URL")),
        log_dir=state_dir / "demo" / "logs",
        report_path=report_path,
        env_file=demo_env_path(state_dir),
        procfile=procfile,
    )


def start_processes(plan: DemoPlan, group: ProcessGroup, step: Callable[[str], None]) -> None:
    """The sandbox and recon's processes, each ready before the next depends on it."""
    sandbox_port = plan.sandbox_url.rsplit(":", 1)[1]
    step("starting the provider sandbox")
    group.start(
        "sandbox",
        recon_argv("sandbox", "--port", sandbox_port, "--finality-delay", "1", "--seed", "7"),
        plan.env,
    )
    wait_until_ready(f"{plan.sandbox_url}/_sandbox/state", group)
    web_port = plan.web_url.rsplit(":", 1)[1]
    if plan.procfile is not None:
        _start_procfile(plan, group, step, web_port)
    else:
        step("migrating the store (release)")
        _run_release(group, recon_argv("db", "upgrade"), plan.env)
        mode = (
            "web, worker and scheduler on Redis"
            if plan.distributed
            else "web with embedded workers"
        )
        step(f"starting recon ({mode})")
        group.start("web", recon_argv("web", "--port", web_port), plan.env)
        if plan.distributed:
            group.start("worker", recon_argv("worker", "--threads", "4"), plan.env)
            group.start("scheduler", recon_argv("scheduler"), plan.env)
    wait_until_ready(f"{plan.web_url}/ready", group)
    step("waiting for recon to register its webhook")
    wait_for_registration(plan, group)


def _run_release(group: ProcessGroup, argv: list[str], env: Mapping[str, str]) -> None:
    release = group.start("release", argv, env)
    if release.popen.wait(timeout=120) != 0:
        raise RuntimeError(f"the release step failed:\n{release.tail()}")
    group.processes.remove(release)
    _require_empty_store(env["DATABASE_URL"])


def _require_empty_store(database_url: str) -> None:
    """The demo judges recon by exactly the faults it injects: old rows would muddy that."""
    engine = make_engine(database_url)
    try:
        with engine.connect() as conn:
            used = any(
                conn.execute(select(func.count()).select_from(model)).scalar_one()
                for model in (Delivery, Transfer, Alert)
            )
    finally:
        engine.dispose()
    if used:
        raise RuntimeError(
            "the demo needs an empty store, and DATABASE_URL already holds recon data: "
            "point it at a new database (for example: createdb recon_demo)"
        )


def _start_procfile(
    plan: DemoPlan, group: ProcessGroup, step: Callable[[str], None], web_port: str
) -> None:
    """Run the Procfile's own lines under honcho, exactly as the README tells an operator."""
    assert plan.procfile is not None
    bin_dir = str(Path(sys.executable).parent)
    env = {**plan.env, "PATH": f"{bin_dir}{os.pathsep}{plan.env.get('PATH', '')}"}
    honcho = honcho_argv(plan.procfile, plan.env_file)
    overridden = dotenv_overrides(plan.env, Path.cwd())
    if overridden:
        step(f"Procfile: ./.env not read (it would override {', '.join(overridden)})")
    step("Procfile: release")
    _run_release(group, [*honcho, "start", "release"], env)
    step("Procfile: web, worker, scheduler")
    # honcho gives the first process named the base port as $PORT, which `web` binds.
    group.start("procfile", [*honcho, "start", "-p", web_port, "web", "worker", "scheduler"], env)


def wait_for_registration(plan: DemoPlan, group: ProcessGroup, timeout: float = 30.0) -> None:
    """Our receiver URL must be an ACTIVE webhook at the company API before events flow."""
    headers = {
        "X-API-Key": plan.env["RECON_COMPANY_API_KEY"],
        "X-App-Id": plan.env.get("RECON_COMPANY_APP_ID", "6f1c2a34-0000-4000-8000-00000000c0de"),
    }
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        group.check_alive()
        response = httpx.get(
            f"{plan.sandbox_url}/company/v1/webhooks", params={"status": "ACTIVE"}, headers=headers
        )
        if response.status_code == 200:
            hooks = response.json()["data"]["webhooks"]
            if any(h["url"].startswith(plan.web_url) for h in hooks):
                return
        time.sleep(0.2)
    raise RuntimeError("recon did not register its webhook at the sandbox within 30 s")


def _open_alert_kinds(session: Session) -> dict[str, int]:
    rows = session.execute(
        select(Alert.kind, func.count())
        .where(Alert.state.in_(("open", "acknowledged")))
        .group_by(Alert.kind)
    ).all()
    return {kind: int(count) for kind, count in rows}


def _unsettled(session: Session, stuck: object) -> int:
    pending = session.scalar(
        select(func.count()).select_from(Delivery).where(Delivery.state == "pending")
    )
    waiting = session.scalar(
        select(func.count())
        .select_from(Transfer)
        .where(Transfer.is_terminal.is_(False), Transfer.transfer_ref != stuck)
    )
    return int(pending or 0) + int(waiting or 0)


def wait_until_settled(
    group: ProcessGroup,
    session_factory: sessionmaker[Session],
    record: ScenarioRecord,
    step: Callable[[str], None],
) -> dict[str, int]:
    """Until every expected alert is open, nothing is pending, and that has held for a moment."""
    expected = expected_alerts(record)
    deadline = time.monotonic() + SETTLE_TIMEOUT_SECONDS
    kinds: dict[str, int] = {}
    stable_since: float | None = None
    while time.monotonic() < deadline:
        group.check_alive()
        with session_factory() as session:
            kinds = _open_alert_kinds(session)
            busy = _unsettled(session, record.stuck_transfer)
        step(f"reconciling: {sum(kinds.values())} alerts open, {busy} items in flight")
        if all(kinds.get(kind, 0) >= n for kind, n in expected.items()) and busy == 0:
            # A few more passes, so a late unexpected alert has its chance to show up.
            stable_since = stable_since or time.monotonic()
            if time.monotonic() - stable_since > 6:
                return kinds
        else:
            stable_since = None
        time.sleep(0.5)
    return kinds


def run_demo(
    plan: DemoPlan,
    step: Callable[[str], None],
    hold_open: Callable[[DemoOutcome], None] | None = None,
) -> DemoOutcome:
    """Run the scenario and check recon's alerts; `hold_open` keeps everything up until it returns.

    `hold_open` receives the outcome while the sandbox and recon's processes still run (so the
    console can be looked at); they are stopped when it returns or raises.
    """
    started_at: datetime = utcnow()
    # The report printed here speaks the units the demo's processes were configured with.
    use_unit_exponents(dict(parse_unit_exponents(UNIT_EXPONENTS)))
    # Written first, so that even a failed run leaves the settings to inspect its store with.
    write_demo_env(plan.env_file, plan.env)
    group = ProcessGroup(plan.log_dir)
    engine = make_engine(plan.database_url)
    try:
        start_processes(plan, group, step)
        session_factory = make_session_factory(engine)
        control = SandboxControl(plan.sandbox_url)
        with GatewayClient(
            plan.sandbox_url,
            plan.env["RECON_GATEWAY_API_KEY"],
            idempotency=StoreIdempotencyKeys(session_factory),
        ) as gateway:
            record = run_scenario(gateway, control, session_factory, step)
        control.close()
        kinds = wait_until_settled(group, session_factory, record, step)
        step("building the report")
        with session_factory() as session:
            # The grace the demo's passes ran with, so the report and the alerts agree.
            report = build_report(
                session,
                ReportWindow(since=started_at, until=utcnow()),
                grace_seconds=int(DEMO_TIMINGS["RECON_NOTIFICATION_GRACE_SECONDS"]),
                finality_seconds=int(DEMO_TIMINGS["RECON_FINALITY_DEADLINE_SECONDS"]),
            )
        plan.report_path.parent.mkdir(parents=True, exist_ok=True)
        plan.report_path.write_text(render(report, "html"), encoding="utf-8")
        outcome = DemoOutcome(
            record=record, report=report, open_kinds=kinds, text_report=render(report, "text")
        )
        if hold_open is not None:
            hold_open(outcome)
    finally:
        group.stop()
        engine.dispose()
    return outcome
