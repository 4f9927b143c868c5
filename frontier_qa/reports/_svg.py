"""Small inline-SVG charts for the HTML report: no plotting library, no JavaScript.

Each function returns an ``<svg>`` element as a string, sized in CSS pixels, with a
``<title>`` on every mark so hovering shows the exact numbers. All labels go through
:func:`~frontier_qa.reports._text.esc`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from frontier_qa.reports._text import esc, shorten
from frontier_qa.store._records import BoundaryRecord, CaseClass, KnobValue

COLORS: dict[CaseClass, str] = {
    CaseClass.FAILURE: "#d1495b",
    CaseClass.SUSPECT: "#8e5ea2",
    CaseClass.FRONTIER: "#e59f00",
    CaseClass.UNCHECKED: "#f3d27a",
    CaseClass.UNRESOLVED: "#8d99ae",
    CaseClass.PASS: "#2e933c",
    CaseClass.INVALID: "#c8c8c8",
}
STACK_ORDER = (
    CaseClass.PASS,
    CaseClass.FRONTIER,
    CaseClass.UNCHECKED,
    CaseClass.SUSPECT,
    CaseClass.FAILURE,
    CaseClass.UNRESOLVED,
    CaseClass.INVALID,
)  # bottom (or left) first
_AXIS = "#555"
_GRID = "#e4e4e4"
_FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``top`` (steps of 1, 2, 2.5 or 5 × 10^n)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw - 1e-12)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def _num(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 1e-9 else f"{value:.3g}"


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(title)}" {_FONT}>'
        f"<title>{esc(title)}</title>"
        f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="13" font-weight="600">'
        f"{esc(title)}</text>" + "".join(body) + "</svg>"
    )


def _y_axis(
    body: list[str],
    ticks: Sequence[float],
    x0: float,
    x1: float,
    y0: float,
    scale: float,
    fmt=_num,
    label: str = "",
) -> None:
    for t in ticks:
        y = y0 - t * scale
        body.append(f'<line x1="{x0:.1f}" x2="{x1:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{_GRID}"/>')
        body.append(
            f'<text x="{x0 - 6:.1f}" y="{y + 4:.1f}" text-anchor="end" fill="{_AXIS}">{esc(fmt(t))}</text>'
        )
    body.append(
        f'<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{y0:.1f}" y2="{y0 - ticks[-1] * scale:.1f}" '
        f'stroke="{_AXIS}"/>'
    )
    if label:
        mid = y0 - ticks[-1] * scale / 2
        body.append(
            f'<text transform="translate(12 {mid:.1f}) rotate(-90)" text-anchor="middle" '
            f'fill="{_AXIS}">{esc(label)}</text>'
        )


def histogram_svg(
    edges: Sequence[float],
    by_class: dict[CaseClass, Sequence[int]],
    *,
    band: tuple[float, float] | None = None,
    width: int = 560,
    height: int = 280,
) -> str:
    """Stacked p̂ histogram by class, with the frontier band shaded when given."""
    left, right, top, bottom = 52, 16, 28, 44
    pw, ph = width - left - right, height - top - bottom
    bins = len(edges) - 1
    totals = [sum(by_class.get(c, [0] * bins)[i] for c in STACK_ORDER) for i in range(bins)]
    ticks = nice_ticks(max(totals, default=0) or 1)
    scale = ph / ticks[-1]
    y0 = top + ph
    body: list[str] = []
    if band is not None:
        bx0, bx1 = left + band[0] * pw, left + band[1] * pw
        body.append(
            f'<rect x="{bx0:.1f}" y="{top}" width="{bx1 - bx0:.1f}" height="{ph}" fill="#fff3d6">'
            f"<title>frontier band {band[0]:.2f}–{band[1]:.2f}</title></rect>"
        )
        body.append(
            f'<text x="{(bx0 + bx1) / 2:.1f}" y="{top + 12}" text-anchor="middle" fill="#a87400">'
            f"frontier band</text>"
        )
    _y_axis(body, ticks, left, left + pw, y0, scale, label="cases")
    bw = pw / bins
    for i in range(bins):
        y: float = y0
        for cls in STACK_ORDER:
            n = by_class.get(cls, [0] * bins)[i]
            if not n:
                continue
            h = n * scale
            y -= h
            body.append(
                f'<rect x="{left + i * bw + 1:.1f}" y="{y:.1f}" width="{bw - 2:.1f}" height="{h:.1f}" '
                f'fill="{COLORS[cls]}"><title>p̂ {edges[i]:.2f}–{edges[i + 1]:.2f}: '
                f"{n} {cls.value}</title></rect>"
            )
    for i, e in enumerate(edges):
        x = left + i * bw
        body.append(f'<text x="{x:.1f}" y="{y0 + 16:.1f}" text-anchor="middle" fill="{_AXIS}">{e:.1f}</text>')
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y0}" y2="{y0}" stroke="{_AXIS}"/>')
    body.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 8}" text-anchor="middle" fill="{_AXIS}">'
        f"p̂ (majority share of k samples)</text>"
    )
    return _svg(width, height, "p̂ distribution", body)


def frontier_map_svg(rows: Sequence[tuple[str, dict[CaseClass, int]]], *, width: int = 560) -> str:
    """Horizontal stacked bars: one per topic, cases by class."""
    left, right, top, bottom, row_h = 150, 40, 28, 36, 22
    height = top + bottom + row_h * max(len(rows), 1)
    pw = width - left - right
    top_count = max((sum(c.values()) for _, c in rows), default=0)
    ticks = nice_ticks(top_count or 1)
    scale = pw / ticks[-1]
    body: list[str] = []
    y_end = top + row_h * len(rows)
    for t in ticks:
        x = left + t * scale
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{y_end}" stroke="{_GRID}"/>')
        body.append(
            f'<text x="{x:.1f}" y="{y_end + 14}" text-anchor="middle" fill="{_AXIS}">{_num(t)}</text>'
        )
    for j, (topic, counts) in enumerate(rows):
        y = top + j * row_h
        body.append(
            f'<text x="{left - 6}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end">'
            f"<title>{esc(topic)}</title>{esc(shorten(topic, 22))}</text>"
        )
        x = float(left)
        for cls in STACK_ORDER:
            n = counts.get(cls, 0)
            if not n:
                continue
            w = n * scale
            body.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{COLORS[cls]}">'
                f"<title>{esc(topic)}: {n} {cls.value}</title></rect>"
            )
            x += w
        body.append(
            f'<text x="{x + 4:.1f}" y="{y + row_h / 2 + 4:.1f}" fill="{_AXIS}">{sum(counts.values())}</text>'
        )
    body.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" fill="{_AXIS}">cases</text>'
    )
    return _svg(width, height, "Frontier map by topic", body)


def line_svg(
    points: Sequence[tuple[datetime, float]],
    *,
    title: str,
    y_label: str,
    y_fmt=_num,
    color: str = "#1f6fb2",
    width: int = 560,
    height: int = 240,
) -> str:
    """A cumulative quantity over wall-clock time (UTC), as a step-free polyline with dots."""
    left, right, top, bottom = 60, 20, 28, 40
    pw, ph = width - left - right, height - top - bottom
    y0 = top + ph
    body: list[str] = []
    if not points:
        body.append(
            f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" fill="{_AXIS}">no data</text>'
        )
        return _svg(width, height, title, body)
    t0 = points[0][0]
    span = max((points[-1][0] - t0).total_seconds(), 1.0)
    ticks = nice_ticks(max(v for _, v in points) or 1)
    scale = ph / ticks[-1]
    _y_axis(body, ticks, left, left + pw, y0, scale, fmt=y_fmt, label=y_label)
    xy = [(left + (t - t0).total_seconds() / span * pw, y0 - v * scale) for t, v in points]
    body.append(
        f'<polyline fill="none" stroke="{color}" stroke-width="2" '
        f'points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in xy)}"/>'
    )
    if len(points) <= 200:
        for (t, v), (x, y) in zip(points, xy, strict=True):
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}">'
                f"<title>{t:%H:%M:%S}: {esc(y_fmt(v))}</title></circle>"
            )
    day = span > 86400
    for i in range(5):
        frac = i / 4
        stamp = datetime.fromtimestamp(t0.timestamp() + frac * span, tz=t0.tzinfo)
        label = stamp.strftime("%m-%d %H:%M" if day else "%H:%M:%S")
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"  # keep the end labels inside the box
        body.append(
            f'<text x="{left + frac * pw:.1f}" y="{y0 + 16}" text-anchor="{anchor}" '
            f'fill="{_AXIS}">{label}</text>'
        )
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y0}" y2="{y0}" stroke="{_AXIS}"/>')
    body.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" text-anchor="middle" '
        f'fill="{_AXIS}">time (UTC)</text>'
    )
    return _svg(width, height, title, body)


ACCURACY_COLOR = "#1f6fb2"
P_HAT_COLOR = "#8e5ea2"
THRESHOLD_COLORS = ("#e59f00", "#d1495b", "#6b4c9a", "#2e933c")  # high threshold first


def _same(a: KnobValue | None, b: KnobValue) -> bool:
    return a is not None and isinstance(a, bool) == isinstance(b, bool) and a == b  # True is not the value 1


def boundary_svg(boundary: BoundaryRecord, *, width: int = 560, height: int = 290) -> str:
    """P(correct) along one knob: the knob values evenly spaced in the record's order (easy to hard),
    the mean accuracy as a line with dots and whiskers for its 90 % interval, the mean p̂ as a dashed
    line, a dashed horizontal line at each crossing's threshold and a vertical marker where
    P(correct) first falls below it. Unmeasured values are gaps: no dot, the line only bridged by
    a faint dotted stretch.

    Marks carry a ``class`` (``acc``, ``whisker``, ``phat``, ``threshold``, ``crossing``) and a ``<title>``.
    """
    left, right, top, bottom = 48, 34, 28, 70
    pw, ph = width - left - right, height - top - bottom
    y0 = top + ph
    levels = boundary.levels
    body: list[str] = []
    _y_axis(body, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0], left, left + pw, y0, ph, fmt=lambda v: f"{v:.1f}",
            label="P(correct)")
    n = max(len(levels), 1)
    step = pw / n

    def x_at(i: int) -> float:
        return left + (i + 0.5) * step

    def y_at(p: float) -> float:
        return y0 - p * ph

    name = esc(boundary.knob)
    every = max(1, math.ceil(n * 34 / pw))  # label at most one value per ~34 px
    for i, level in enumerate(levels):
        if i % every == 0 or i == n - 1:
            body.append(f'<text x="{x_at(i):.1f}" y="{y0 + 15:.1f}" text-anchor="middle" fill="{_AXIS}">'
                        f"<title>{name}={esc(level.value)}</title>{esc(shorten(str(level.value), 8))}</text>")
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y0}" y2="{y0}" stroke="{_AXIS}"/>')
    easy = "" if boundary.easy == "low" else f" (easy end: {boundary.easy})"
    body.append(f'<text x="{left + pw / 2:.1f}" y="{y0 + 31:.1f}" text-anchor="middle" fill="{_AXIS}">'
                f"{name}, easy → hard{esc(easy)}</text>")
    crossings = sorted(boundary.crossings, key=lambda c: -c.threshold)
    for j, c in enumerate(crossings):  # under the curve
        color = THRESHOLD_COLORS[j % len(THRESHOLD_COLORS)]
        y = y_at(c.threshold)
        t = f"{c.threshold:g}"
        body.append(f'<line class="threshold" x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" '
                    f'stroke="{color}" stroke-dasharray="6 4"><title>threshold {t}: {esc(c.text)}</title></line>')
        body.append(f'<text x="{left + pw + 3}" y="{y + 4:.1f}" fill="{color}">{t}</text>')
        at = next((i for i, level in enumerate(levels) if _same(c.first_below, level.value)), None)
        if at is not None:
            x = x_at(at)
            body.append(f'<line class="crossing" x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{y0}" stroke="{color}" '
                        f'stroke-width="1.5" stroke-dasharray="2 3"><title>{esc(c.text)}</title></line>')
            body.append(f'<text x="{x + 3:.1f}" y="{top + 10 + 12 * j}" fill="{color}">&lt;{t}</text>')
    measured = [(i, level, level.accuracy) for i, level in enumerate(levels) if level.accuracy is not None]
    p_hats = [(x_at(i), y_at(level.p_hat)) for i, level in enumerate(levels) if level.p_hat is not None]
    if len(p_hats) > 1:
        body.append(f'<polyline class="phat" fill="none" stroke="{P_HAT_COLOR}" stroke-width="1.5" '
                    f'stroke-dasharray="5 3" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in p_hats)}"/>')
    for (i, _, a), (k, _, b) in zip(measured, measured[1:], strict=False):  # neighbours solid, a gap dotted
        style = 'stroke-width="2"' if k == i + 1 else 'stroke-width="1" stroke-dasharray="1 3" opacity="0.6"'
        body.append(f'<line x1="{x_at(i):.1f}" y1="{y_at(a):.1f}" x2="{x_at(k):.1f}" y2="{y_at(b):.1f}" '
                    f'stroke="{ACCURACY_COLOR}" {style}/>')
    for i, level, accuracy in measured:
        x, y = x_at(i), y_at(accuracy)
        interval = ""
        if level.low is not None and level.high is not None:
            interval = f" [{level.low:.2f}–{level.high:.2f}]"
            body.append(f'<line class="whisker" x1="{x:.1f}" x2="{x:.1f}" y1="{y_at(level.low):.1f}" '
                        f'y2="{y_at(level.high):.1f}" stroke="{ACCURACY_COLOR}" stroke-width="1.5"/>')
        p_hat = "" if level.p_hat is None else f", mean p̂ {level.p_hat:.2f}"
        body.append(f'<circle class="acc" cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{ACCURACY_COLOR}">'
                    f"<title>{name}={esc(level.value)}: accuracy {accuracy:.2f}{interval} over "
                    f"{level.instances} instances, {level.samples} samples{p_hat}</title></circle>")
    if not measured:
        body.append(f'<text x="{left + pw / 2:.1f}" y="{top + ph / 2:.1f}" text-anchor="middle" '
                    f'fill="{_AXIS}">nothing measured</text>')
    ly = height - 12
    legend = [
        (f'<line x1="0" x2="18" y1="0" y2="0" stroke="{ACCURACY_COLOR}" stroke-width="2"/>'
         f'<circle cx="9" cy="0" r="3" fill="{ACCURACY_COLOR}"/>', "accuracy (90 % interval)"),
        (f'<line x1="0" x2="18" y1="0" y2="0" stroke="{P_HAT_COLOR}" stroke-width="1.5" stroke-dasharray="5 3"/>',
         "mean p̂"),
        (f'<line x1="0" x2="18" y1="0" y2="0" stroke="{THRESHOLD_COLORS[0]}" stroke-dasharray="6 4"/>',
         "threshold"),
    ]
    if any(c.first_below is not None for c in crossings):
        legend.append((f'<line x1="9" x2="9" y1="-6" y2="6" stroke="{THRESHOLD_COLORS[0]}" stroke-width="1.5" '
                       f'stroke-dasharray="2 3"/>', "first value below it"))
    x = float(left)
    for mark, label in legend:
        body.append(f'<g class="legend" transform="translate({x:.1f} {ly - 4})">{mark}'
                    f'<text x="22" y="4" fill="{_AXIS}">{label}</text></g>')
        x += 30 + 6.2 * len(label)
    return _svg(width, height, shorten(boundary.axis, 80), body)
