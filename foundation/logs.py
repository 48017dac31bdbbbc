"""structlog set-up: JSON lines in production, a readable console in a terminal, no secrets ever.

Redaction works three ways, because a secret can hide under any field name:
- by field name: anything whose name mentions a key, secret, token, password, authorization,
  cookie or signature is masked, at any depth;
- by shape: values that look like provider keys, webhook secrets or bearer credentials;
- by value: every secret the process was configured with is registered at start-up, and any
  string containing one is masked wherever it appears, even inside an exception message.
"""

from __future__ import annotations

import logging
import random
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

import structlog
from structlog.typing import EventDict, WrappedLogger

from foundation.secret import MASK, Secret

#: Field names that always hold something secret, whatever else they are called.
SECRET_FIELD_PATTERN: Final = re.compile(
    r"(api[-_]?key|secret|token|passw|authorization|cookie|signature|credential|private)",
    re.IGNORECASE,
)

#: Value shapes that are credentials wherever they appear.
SECRET_VALUE_PATTERN: Final = re.compile(
    r"(whsec_[A-Za-z0-9+/=]+|ak_(?:test|live)_[A-Za-z0-9_\-]+|ck_(?:test|live)_[A-Za-z0-9_\-]+"
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=\-]+)"
)

_known_secrets: set[str] = set()
_known_lock = threading.Lock()


def register_secrets(secrets: Iterable[Secret | str | None]) -> None:
    """Remember secret values so any log line containing them is masked."""
    with _known_lock:
        for s in secrets:
            value = s.reveal() if isinstance(s, Secret) else s
            # Very short values would mask ordinary words; real credentials are long.
            if value and len(value) >= 8:
                _known_secrets.add(value)


def redact_text(text: str) -> str:
    """Mask known secret values and credential-shaped substrings in free text."""
    for value in _known_secrets:
        if value in text:
            text = text.replace(value, MASK)
    return SECRET_VALUE_PATTERN.sub(MASK, text)


def _redact(value: Any, depth: int = 0) -> Any:
    if depth > 8:
        return value
    if isinstance(value, Secret):
        return MASK
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, bytes):
        return redact_text(value.decode("utf-8", "replace"))
    if isinstance(value, Mapping):
        return {
            k: MASK
            if isinstance(k, str) and SECRET_FIELD_PATTERN.search(k)
            else _redact(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_redact(v, depth + 1) for v in value]
    return value


def redact_secrets(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """structlog processor: the last word before rendering, so nothing added later escapes it."""
    for key in list(event_dict):
        if SECRET_FIELD_PATTERN.search(key):
            event_dict[key] = MASK
        else:
            event_dict[key] = _redact(event_dict[key])
    return event_dict


#: Loggers of libraries that write a line per routine event at INFO: APScheduler's "Running
#: job" / "executed successfully" pair for every tick was 95% of the scheduler's log; Alembic's
#: "setup plugin" lines were seven of every web start's first lines. They speak at WARNING
#: unless recon runs at debug.
CHATTY_LIBRARY_LOGGERS: Final = (
    "apscheduler",
    "apscheduler.scheduler",
    "apscheduler.executors",
    "alembic.runtime.plugins",
)


class _ItemSampling:
    """The share of per-item lines (`log_item`) written at info instead of debug."""

    rate = 0.0
    rng = random.Random()


def log_item(logger: Any, event: str, **fields: Any) -> None:
    """A line about one item (a delivery processed, a request sent, a page read).

    Per-item lines are what fills a production log at a thousand events a second, so they are
    written at debug; a summary line per pass, poll round or batch stays at info. With
    RECON_LOG_ITEM_SAMPLE > 0 that share of them is written at info (marked `sampled`), for
    the day someone needs to see a few without turning the whole process to debug.
    """
    if _ItemSampling.rate and _ItemSampling.rng.random() < _ItemSampling.rate:
        logger.info(event, sampled=True, **fields)
    else:
        logger.debug(event, **fields)


def configure_logging(
    log_format: str = "auto", level: str = "info", item_sample: float = 0.0
) -> None:
    """Configure structlog and route stdlib logging (uvicorn, dramatiq) through it.

    Always to stderr: a command's stdout carries its answer alone, so that a report piped into
    a file or a script is never interleaved with log lines. The level is the caller's choice
    (the CLI keeps one-shot commands to warnings unless asked for more).
    """
    as_json = log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        redact_secrets,
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    numeric = logging.getLevelName(level.upper())
    structlog.configure(
        processors=[*shared[:-2], structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared[:-2],
        processors=[
            structlog.processors.format_exc_info,
            redact_secrets,
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    # httpx logs full URLs at INFO; our clients log their own redacted lines instead.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)
    for name in CHATTY_LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(
            logging.DEBUG if numeric <= logging.DEBUG else logging.WARNING
        )
    _ItemSampling.rate = item_sample


def bind_correlation_id(correlation_id: str, **extra: Any) -> None:
    """Put a correlation id on every line logged by this request or message."""
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(correlation_id=correlation_id, **extra)


def clear_correlation() -> None:
    structlog.contextvars.clear_contextvars()
