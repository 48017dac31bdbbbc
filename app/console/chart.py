"""The holding chart: balance against posted sum over time, drawn as SVG on the server.

No script and no third-party library: a few hundred points become two polylines on a fixed
viewBox, with the axes labelled in the currency's own format and dates a person reads. Drift
shows as the gap between the lines; each check where they differ gets a red mark.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

from markupsafe import Markup, escape

from app.console.formatting import money, when
from reconciliation.store import BalanceCheck

#: The drawing's size in SVG units (it scales to the page's width).
WIDTH: Final = 760
HEIGHT: Final = 260
#: Room for the axis labels.
LEFT: Final = 120
BOTTOM: Final = 36
TOP: Final = 16
RIGHT: Final = 16


def _scale(value: float, low: float, high: float, start: float, end: float) -> float:
    if high == low:
        return (start + end) / 2
    return start + (value - low) * (end - start) / (high - low)


def balance_chart(checks: Sequence[BalanceCheck], currency: str) -> Markup:
    """An SVG of settled balance and posted sum per check, oldest on the left."""
    if not checks:
        return Markup(
            '<p class="empty">No balance checks yet: a reconciliation pass compares each '
            "balance snapshot with the posted sum and records it here.</p>"
        )
    times = [c.observed_at.timestamp() for c in checks]
    values = [v for c in checks for v in (c.settled_minor, c.posted_minor)]
    t0, t1 = min(times), max(times)
    v0, v1 = min(values), max(values)
    pad = max((v1 - v0) // 10, 1)
    v0, v1 = v0 - pad, v1 + pad

    def x(t: float) -> float:
        return round(_scale(t, t0, t1, LEFT, WIDTH - RIGHT), 1)

    def y(v: float) -> float:
        return round(_scale(v, v0, v1, HEIGHT - BOTTOM, TOP), 1)

    def line(points: Sequence[tuple[float, int]], css: str) -> str:
        path = " ".join(f"{x(t)},{y(v)}" for t, v in points)
        return f'<polyline class="{css}" fill="none" points="{path}"/>'

    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="Balance against posted sum, {len(checks)} checks">',
        f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" '
        f'y2="{HEIGHT - BOTTOM}"/>',
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>',
    ]
    for v in (v0 + pad, (v0 + v1) // 2, v1 - pad):
        parts.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y(v) + 4}" text-anchor="end">'
            f"{escape(money(int(v), currency))}</text>"
        )
    for t, anchor in ((t0, "start"), (t1, "end")):
        stamp = when(datetime.fromtimestamp(t, tz=UTC))
        parts.append(
            f'<text class="tick" x="{x(t)}" y="{HEIGHT - 10}" text-anchor="{anchor}">'
            f"{escape(stamp)}</text>"
        )
    parts.append(
        line([(t, c.settled_minor) for t, c in zip(times, checks, strict=True)], "balance")
    )
    parts.append(line([(t, c.posted_minor) for t, c in zip(times, checks, strict=True)], "posted"))
    for t, c in zip(times, checks, strict=True):
        if c.drift_minor != 0:
            parts.append(
                f'<circle class="drift" cx="{x(t)}" cy="{y(c.settled_minor)}" r="4">'
                f"<title>{escape(when(c.observed_at))}: drift "
                f"{escape(money(c.drift_minor, currency, signed=True))}</title></circle>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every interpolated text above is escaped
