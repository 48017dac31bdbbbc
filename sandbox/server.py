"""Running the sandbox: in a background thread for tests (``SandboxServer``), or blocking for
the CLI (``serve``)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from types import TracebackType

import uvicorn

from sandbox.app import create_app
from sandbox.config import SandboxConfig
from sandbox.state import SandboxState

_log = logging.getLogger("sandbox.server")


class SandboxServer:
    """The sandbox under uvicorn on 127.0.0.1 and a free port, for as long as the ``with`` lasts.

    ``base_url`` has no trailing slash; the gateway is ``base_url + "/v1"`` and the company API
    ``base_url + "/company/v1"``. ``state`` is the live world, for set-up and inspection.
    """

    def __init__(
        self, config: SandboxConfig | None = None, state: SandboxState | None = None
    ) -> None:
        self.state = state or SandboxState(config)
        self.config = self.state.config
        self.app = create_app(state=self.state)
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    def start(self) -> SandboxServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted sockets inherit this: without it Nagle + delayed ACK add ~40 ms per reused
        # keep-alive request, which dominates any benchmark that goes through the sandbox.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        self._socket = sock
        port = sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="sandbox-uvicorn", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("sandbox server failed to start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()
        self.state.close()
        self._server = self._thread = self._socket = None

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def serve(host: str, port: int, config: SandboxConfig) -> None:
    """Blocking: what ``recon sandbox --port 8080`` runs."""
    app = create_app(config)
    keys = ", ".join(sorted(config.gateway_keys))
    # The operator needs the credentials to point a client at the sandbox.
    print(
        f"recon sandbox on http://{host}:{port}\n"
        f"  gateway  http://{host}:{port}/v1           Bearer key(s): {keys}\n"
        f"  company  http://{host}:{port}/company/v1   X-API-Key: {config.company_api_key}  "
        f"X-App-Id: {config.company_app_id}\n"
        f"  control  http://{host}:{port}/_sandbox     (no auth)",
        flush=True,
    )
    uvicorn.run(app, host=host, port=port, log_level="info")
