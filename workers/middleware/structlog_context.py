"""Every log line of a message carries its message id (the correlation id) and actor name.

Bound when a worker thread picks a message up and cleared when it is done, so lines from the
domain code, the upstream client and the store all say which message they belong to, and
nothing leaks into the next message the thread handles.
"""

from __future__ import annotations

from typing import Any

import structlog
from dramatiq import Broker, Middleware
from dramatiq.broker import MessageProxy

from foundation import bind_correlation_id, clear_correlation

log = structlog.get_logger(__name__)


class StructlogContext(Middleware):
    """Binds correlation_id=message id, actor and queue for the duration of each message."""

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        bind_correlation_id(
            message.message_id,
            actor=message.actor_name,
            queue=message.queue_name,
            retries=message.options.get("retries", 0),
        )

    def after_process_message(
        self,
        broker: Broker,
        message: MessageProxy,
        *,
        result: Any = None,
        exception: BaseException | None = None,
    ) -> None:
        if exception is not None:
            # Messages of ProviderError and store errors carry no credentials (by construction
            # and by the redacting processor); the type and text are what an operator needs.
            log.warning(
                "worker.message_failed",
                error=type(exception).__name__,
                detail=str(exception)[:500],
            )
        clear_correlation()

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        clear_correlation()
