"""Inline SVG charts drawn here, so the HTML report needs nothing from the network.

Two charts people read faster than tables: open exceptions by age (stacked bars, one colour per
stream) and balance drift over time (one line per holding, zero marked). Every label is
escaped; sizes are fixed so the file renders the same in any browser, offline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Final

from foundation import html_text as escape
from foundation import moment

#: Colours per stream and for lines: distinguishable, and readable when printed in grey.
STREAM_COLOURS: Final = {"posting": "#1f77b4", "notification": "#ff7f0e", "transfer": "#2ca02c"}
LINE_COLOURS: Final = (
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#1f77b4",
)

#: Chart size in pixels: fits a printed A4 page and a laptop window beside the tables.
WIDTH: Final = 640
HEIGHT: Final = 280
#: Room around the plot: the left for axis labels as long as '-1,000,000.00 NGN', the right for
#: the legend of series names.
MARGIN: Final = {"left": 110, "right": 150, "top": 44, "bottom": 40}
#: Height of one legend row under a line chart: its names are whole there (an account number
#: and a name), never cut to fit a column beside the plot.
LEGEND_ROW: Final = 18
#: Closest two axis labels may sit (a little more than the font size) before one is left out.
LABEL_GAP: Final = 14


def _frame(title: str, body: list[str], height: int = HEIGHT) -> str:
    return (
        f'<svg role="img" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">'
        f"<title>{escape(title)}</title>"
        f'<text x="{MARGIN["left"]}" y="18" font-size="14" font-weight="bold">{escape(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def _nice_ceiling(value: int) -> int:
    """A round axis maximum at or above `value` (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1
    magnitude = 1
    while magnitude * 10 <= value:
        magnitude *= 10
    for step in (1, 2, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def stacked_bars(
    title: str, buckets: Sequence[tuple[str, dict[str, int]]], streams: Sequence[str]
) -> str:
    """Stacked bars: one bar per bucket, one segment per stream."""
    plot_w = WIDTH - MARGIN["left"] - MARGIN["right"]
    plot_h = HEIGHT - MARGIN["top"] - MARGIN["bottom"]
    top = _nice_ceiling(max((sum(c.values()) for _, c in buckets), default=0))
    slot = plot_w / max(len(buckets), 1)
    bar_w = slot * 0.6
    base_y = MARGIN["top"] + plot_h
    body = [
        f'<line x1="{MARGIN["left"]}" y1="{base_y}" x2="{MARGIN["left"] + plot_w}" y2="{base_y}" stroke="#333"/>',
        f'<line x1="{MARGIN["left"]}" y1="{MARGIN["top"]}" x2="{MARGIN["left"]}" y2="{base_y}" stroke="#333"/>',
    ]
    steps = min(4, top)  # whole counts only: no two ticks with the same label
    for tick in range(steps + 1):
        value = top * tick // steps
        y = base_y - plot_h * value / top
        body.append(
            f'<text x="{MARGIN["left"] - 6}" y="{y + 4:.1f}" text-anchor="end">{value}</text>'
            f'<line x1="{MARGIN["left"]}" y1="{y:.1f}" x2="{MARGIN["left"] + plot_w}" y2="{y:.1f}" '
            'stroke="#ddd"/>'
        )
    for index, (label, counts) in enumerate(buckets):
        x = MARGIN["left"] + slot * index + (slot - bar_w) / 2
        y = base_y
        for stream in streams:
            count = counts.get(stream, 0)
            if not count:
                continue
            h = plot_h * count / top
            y -= h
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{h:.1f}" '
                f'fill="{STREAM_COLOURS.get(stream, "#999")}"><title>{escape(label)} days, '
                f"{escape(stream)}s: {count}</title></rect>"
            )
        total = sum(counts.values())
        body.append(
            f'<text x="{x + bar_w / 2:.1f}" y="{y - 4:.1f}" text-anchor="middle">{total}</text>'
            f'<text x="{x + bar_w / 2:.1f}" y="{base_y + 16}" text-anchor="middle">'
            f"{escape(label)} days</text>"
        )
    for index, stream in enumerate(streams):
        y = MARGIN["top"] + 20 * index
        x = WIDTH - MARGIN["right"] + 20
        body.append(
            f'<rect x="{x}" y="{y}" width="12" height="12" fill="{STREAM_COLOURS.get(stream, "#999")}"/>'
            f'<text x="{x + 18}" y="{y + 11}">{escape(stream)}s</text>'
        )
    return _frame(title, body)


def lines_over_time(
    title: str,
    series: Sequence[tuple[str, Sequence[tuple[datetime, int, bool]]]],
    value_label: Callable[[int], str] = str,
) -> str:
    """One line per named series of (time, value, explained); a dashed line marks zero.

    A point `explained` (drift that transfers still in flight account for) is drawn hollow: it
    is not counted as drift, so the chart and the figure beside it agree on what drifts. The
    legend sits under the plot, one row per series with its whole name; the plot spans the
    width. `value_label` writes a value for the axis and the tooltips (an amount in major units,
    when every line is in one currency).
    """
    points = [(t, v) for _, s in series for t, v, _ in s]
    if not points:
        return _frame(title, [f'<text x="{MARGIN["left"]}" y="60">No drift in this window.</text>'])
    plot_w = WIDTH - MARGIN["left"] - 20
    plot_h = HEIGHT - MARGIN["top"] - MARGIN["bottom"]
    start = min(t for t, _ in points).timestamp()
    end = max(t for t, _ in points).timestamp()
    span_t = max(end - start, 1.0)
    low = min(0, *(v for _, v in points))
    high = max(0, *(v for _, v in points))
    span_v = max(high - low, 1)

    def x_of(moment: datetime) -> float:
        return MARGIN["left"] + plot_w * (moment.timestamp() - start) / span_t

    def y_of(value: int) -> float:
        return MARGIN["top"] + plot_h * (high - value) / span_v

    zero = y_of(0)
    body = [
        f'<line x1="{MARGIN["left"]}" y1="{zero:.1f}" x2="{MARGIN["left"] + plot_w}" y2="{zero:.1f}" '
        'stroke="#333" stroke-dasharray="4 3"/>',
    ]
    # The axis: its top and bottom values, and 0 unless it would sit on one of them.
    ticks: dict[float, int] = {MARGIN["top"]: high, MARGIN["top"] + plot_h: low}
    if all(abs(zero - y) >= LABEL_GAP for y in ticks):
        ticks[zero] = 0
    for y, value in ticks.items():
        shown = "0" if value == 0 else value_label(value)
        body.append(
            f'<text x="{MARGIN["left"] - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(shown)}</text>'
        )
    axis_y = MARGIN["top"] + plot_h + 20
    body.append(f'<text x="{MARGIN["left"]}" y="{axis_y}">{escape(_short(start))}</text>')
    if end > start:
        body.append(
            f'<text x="{MARGIN["left"] + plot_w}" y="{axis_y}" text-anchor="end">'
            f"{escape(_short(end))}</text>"
        )
    for index, (name, values) in enumerate(series):
        colour = LINE_COLOURS[index % len(LINE_COLOURS)]
        coords = " ".join(f"{x_of(t):.1f},{y_of(v):.1f}" for t, v, _ in values)
        body.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{coords}"/>')
        for t, v, explained in values:
            fill = "#fff" if explained else colour
            why = " (transfers in flight explain it)" if explained else ""
            body.append(
                f'<circle cx="{x_of(t):.1f}" cy="{y_of(v):.1f}" r="3" fill="{fill}" '
                f'stroke="{colour}" data-value="{v}" data-explained="{int(explained)}">'
                f"<title>{escape(name)} {escape(moment(t))}: {escape(value_label(v))}"
                f"{why}</title></circle>"
            )
        y = HEIGHT + LEGEND_ROW * index
        body.append(
            f'<rect x="{MARGIN["left"]}" y="{y}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{MARGIN["left"] + 18}" y="{y + 11}">{escape(name)}</text>'
        )
    return _frame(title, body, HEIGHT + LEGEND_ROW * len(series))


def _short(epoch: float) -> str:
    return moment(datetime.fromtimestamp(epoch, tz=UTC))
