"""`serve_console`: what `recon demo --serve` (and `make console`) call to open the console.

Serves the whole web app (receiver, API and console) with uvicorn on the given address, prints
the console's URL and the way in, and blocks until interrupted (Ctrl-C). The demo wiring owns
the settings and the enqueue function; this only serves what `create_app` builds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import uvicorn

from app.main import create_app
from foundation.settings import Settings


def serve_console(
    settings: Settings,
    *,
    enqueue: Callable[[Sequence[int]], None] | None,
    host: str = "127.0.0.1",
    port: int | None = None,
    self_register: bool = False,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the app and block until interrupted; `announce` receives the lines to show."""
    chosen = port or settings.web.port
    app = create_app(settings, enqueue=enqueue, self_register=self_register)
    announce(f"recon console: http://{host}:{chosen}/console")
    announce("sign in with any name and RECON_ADMIN_TOKEN; press Ctrl-C to stop")
    uvicorn.run(app, host=host, port=chosen, log_config=None, access_log=False)
