"""Start, watch and stop the processes of a demo or a Procfile run.

Each process writes to its own log file, so a failing demo can point at the file that says why
instead of interleaving four processes on one terminal.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Final

import httpx

from foundation import STATE_DIR_MODE, make_state_dir

#: Seconds a process gets to stop after SIGTERM before it is killed.
STOP_GRACE_SECONDS = 10.0


#: The file honcho reads over its environment unless told otherwise, in the folder it runs in.
DOTENV: Final = ".env"


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def recon_argv(*args: str) -> list[str]:
    """The recon command run by this very interpreter, so a venv needs no activation."""
    return [sys.executable, "-m", "recon", *args]


@dataclass
class ManagedProcess:
    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


#: A demo log's mode: the owner's only.
LOG_FILE_MODE: Final = 0o600


def private_folder(path: Path) -> None:
    """`path` and its parents up to an existing folder created 0700; the demo's own folders
    (`.recon/demo`, its logs) forced to 0700 even when an older run left them looser."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for folder in reversed(missing):
        make_state_dir(folder)
    path.chmod(STATE_DIR_MODE)


@dataclass
class ProcessGroup:
    """Processes started together and stopped together, last started first stopped."""

    log_dir: Path
    processes: list[ManagedProcess] = field(default_factory=list)

    def start(self, name: str, argv: list[str], env: Mapping[str, str]) -> ManagedProcess:
        private_folder(self.log_dir)
        log_path = self.log_dir / f"{name}.log"
        # The logs name holdings, amounts and the demo's own settings: the owner's only,
        # created so (never briefly readable) and forced so if an older run left them looser.
        descriptor = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, LOG_FILE_MODE)
        with os.fdopen(descriptor, "wb") as log:
            os.fchmod(log.fileno(), LOG_FILE_MODE)
            popen = subprocess.Popen(
                argv,
                env=dict(env),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        process = ManagedProcess(name, popen, log_path)
        self.processes.append(process)
        return process

    def check_alive(self) -> None:
        """Raise with the dead process's last log lines: the demo cannot go on without it."""
        for process in self.processes:
            if not process.alive():
                raise RuntimeError(
                    f"{process.name} exited with status {process.popen.returncode}; "
                    f"last lines of {process.log_path}:\n{process.tail()}"
                )

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.alive():
                _signal_group(process.popen, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for process in reversed(self.processes):
            remaining = max(0.1, deadline - time.monotonic())
            try:
                process.popen.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                _signal_group(process.popen, signal.SIGKILL)
                process.popen.wait(timeout=5)
        self.processes.clear()


def _signal_group(popen: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    # Each process leads its own session, so its children (uvicorn, dramatiq workers) go too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(popen.pid, sig)


def wait_until_ready(url: str, group: ProcessGroup, timeout: float = 60.0) -> None:
    """Poll `url` until it answers 200, failing fast if one of the processes died."""
    deadline = time.monotonic() + timeout
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        group.check_alive()
        try:
            response = httpx.get(url, timeout=2.0)
        except httpx.HTTPError as exc:
            last_error = type(exc).__name__
        else:
            if response.status_code == 200:
                return
            last_error = f"HTTP {response.status_code}"
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {timeout:.0f} s ({last_error})")


def honcho_argv(procfile: Path, env_file: Path) -> list[str]:
    """honcho running `procfile` with the demo's own settings file instead of ./.env.

    honcho reads ./.env over the environment it is given. A .env written for a laptop run (the
    README has one made) would replace the demo's database, ports and shortened schedules, and
    the demo would then wait a minute for a web process that listens elsewhere. Told to read
    the demo's own settings file (`recon.demo.env_file`), it reads exactly what the demo set.
    """
    honcho = Path(sys.executable).parent / "honcho"
    return [str(honcho), "-f", str(procfile), "-e", str(env_file.absolute())]


def dotenv_overrides(env: Mapping[str, str], folder: Path) -> list[str]:
    """The names a .env in `folder` sets to other values than the demo's (what honcho would
    have changed had the demo let it read the file); empty without a .env."""
    path = folder / DOTENV
    if not path.is_file():
        return []
    names = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        text = line.strip().removeprefix("export ").strip()
        name, equals, value = text.partition("=")
        if not equals or text.startswith("#") or not name.strip().isidentifier():
            continue
        if env.get(name.strip()) != value.strip().strip("'\""):
            names.append(name.strip())
    return sorted(set(names))


class Stopped(KeyboardInterrupt):
    """SIGTERM arrived: stop the way Ctrl-C stops, children first."""


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside the block, SIGTERM stops like Ctrl-C: the `finally` that stops the children runs.

    By default SIGTERM ends Python at once, without unwinding, and the children (each in a
    session of its own, so that a terminal's Ctrl-C reaches only the demo) would keep running.
    The first SIGTERM raises `Stopped`; later ones are ignored, so they cannot cut the stopping
    short (SIGKILL still can).
    """

    def stop(_signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Stopped

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
