"""The sandbox for the catch-up benchmark: a bulk world, a request counter, a ledger summary.

Run as a process (`python bench/sandbox_host.py --port P ...`) for the real-HTTP variant, or
imported for the in-process one. The counter wraps the sandbox's ASGI app and answers
`GET /_bench/counts`; the summary (per holding: postings, amount sum, and an order-free
checksum of line refs) lets the benchmark check "every posting stored exactly once" without
shipping a million refs around.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from sandbox.app import create_app
from sandbox.bulk import build_bulk, prerender_activity
from sandbox.config import SandboxConfig
from sandbox.state import SandboxState

ACTIVITY_PATH = "/v1/balances/activity"
COUNTS_PATH = "/_bench/counts"

Summary = dict[str, list[int]]


def build_world(holdings: int, postings: int, seed: int) -> SandboxState:
    """A sandbox holding `postings` spread over `holdings`, built by its bulk builder.

    Entries are rendered ahead (`prerender_activity`): the sandbox is the provider's stand-in,
    so a page costs it a byte join and what the benchmark measures is the reader and the store.
    """
    state = SandboxState(SandboxConfig(run_background=False, seed=seed))
    build_bulk(state, holdings=holdings, postings=postings, seed=seed)
    prerender_activity(state)
    return state


def line_checksum(line_ref_int: int) -> int:
    """The part of a line ref folded into the checksum (its high 64 bits)."""
    return line_ref_int >> 64


def ledger_summary(state: SandboxState) -> Summary:
    """holding ref -> [postings, sum of amounts, XOR of line-ref checksums]."""
    summary: Summary = {}
    with state.lock:
        for ref, holding in state.holdings.items():
            xor = 0
            total = 0
            for row in holding.rows:
                xor ^= line_checksum(row[2])
                total += row[4]
            summary[ref] = [len(holding.rows), total, xor]
    return summary


class CountingApp:
    """ASGI wrapper counting requests by path, with activity reads per holding."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.by_path: Counter[str] = Counter()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == COUNTS_PATH:
            body = json.dumps(self.counts()).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        if scope["type"] == "http":
            path = scope["path"]
            key = path if not path.startswith("/v1/programmable-endpoints/") else "endpoint.read"
            with self.lock:
                self.by_path[key] += 1
        await self.app(scope, receive, send)

    def counts(self) -> dict[str, int]:
        with self.lock:
            return dict(self.by_path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--holdings", type=int, required=True)
    parser.add_argument("--postings", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--summary", type=Path, required=True)
    args = parser.parse_args()

    import uvicorn

    state = build_world(args.holdings, args.postings, args.seed)
    args.summary.write_text(json.dumps(ledger_summary(state)))
    app = CountingApp(create_app(state=state))
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
