"""A stand-in for the web receiver: keep each delivery's bytes, then hand it to the workers.

It does what the real receiver does after verifying a signature (reconciliation.notifications.inbox records
the bytes, then workers.dispatch.enqueue_process_delivery is called after the commit), without
the web framework, so the workers' tests do not depend on the web process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from reconciliation.notifications.inbox import InboundDelivery, record_deliveries
from reconciliation.store.db import transaction
from reconciliation.store.types import utcnow
from workers.dispatch import enqueue_process_delivery


@contextmanager
def inbox_receiver(sessions: sessionmaker[Session]) -> Iterator[str]:
    """Serve on a free port; yields the URL to register as the webhook."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            delivery_id = self.headers.get("webhook-id", "")
            with transaction(sessions) as session:
                recorded = record_deliveries(
                    session.connection(),
                    [
                        InboundDelivery(
                            delivery_id=delivery_id,
                            body=body,
                            headers={"webhook-id": delivery_id},
                            scheme="standard",
                            event_type=None,
                            received_at=utcnow(),
                        )
                    ],
                )
            enqueue_process_delivery([r.row_id for r in recorded if r.row_id is not None])
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/webhooks/company"
    finally:
        server.shutdown()
        server.server_close()
