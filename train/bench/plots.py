"""SVG charts of mixccl-train reports (docs/training.md, "Measurements" (f)); plots.sh runs it.

Plain SVG text written here (no plotting library): small, diffable files for docs/img/.

  python3 train/bench/plots.py loss OUT.svg REPORT.json=LABEL REPORT.json=LABEL ...
      the loss curves of the runs (steps[].loss) and, below, each run's relative difference
      from the first run per step, on a log scale (1e-12 and below, 0 included, on its floor)
  python3 train/bench/plots.py stages OUT.svg REPORT.json=TITLE ...
      per rank of each run: mean compute / communication / idle ms per step (steps[].ranks,
      step 1 left out), as stacked bars labelled with the rank's role (ranks[])
"""
import json
import math
import sys
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
PARTS = [("compute_s", "compute", "#4c72b0"), ("comm_s", "communication (waits included)",
                                                 "#dd8452"), ("idle_s", "idle", "#b8b8b8")]
FONT = 'font-family="sans-serif" font-size="12"'


def nice_ticks(lo, hi, count=5):
    """Round tick values covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    ticks = []
    t = first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 10))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def fmt(x):
    return f"{x:.1f}".rstrip("0").rstrip(".")


def tick_label(v):
    return f"{v:g}"


class Svg:
    def __init__(self, width, height):
        self.width, self.height = width, height
        self.items = []

    def add(self, s):
        self.items.append(s)

    def text(self, x, y, s, anchor="start", extra=""):
        self.add(f'<text x="{fmt(x)}" y="{fmt(y)}" text-anchor="{anchor}" {FONT}{extra}>'
                 f'{escape(s)}</text>')

    def line(self, x1, y1, x2, y2, color="#000", extra=""):
        self.add(f'<line x1="{fmt(x1)}" y1="{fmt(y1)}" x2="{fmt(x2)}" y2="{fmt(y2)}" '
                 f'stroke="{color}"{extra}/>')

    def rect(self, x, y, w, h, color):
        self.add(f'<rect x="{fmt(x)}" y="{fmt(y)}" width="{fmt(w)}" height="{fmt(h)}" '
                 f'fill="{color}"/>')

    def polyline(self, points, color, extra=""):
        pts = " ".join(f"{fmt(x)},{fmt(y)}" for x, y in points)
        self.add(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.5"'
                 f'{extra}/>')

    def write(self, path):
        with open(path, "w") as f:
            f.write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
                    f'height="{self.height}" viewBox="0 0 {self.width} {self.height}">\n')
            f.write(f'<rect width="{self.width}" height="{self.height}" fill="#fff"/>\n')
            f.write("\n".join(self.items) + "\n</svg>\n")


def axes(svg, box, xticks, yticks, xmap, ymap, xlabel, ylabel, ylabels=None):
    """Frame, grid and tick labels of one panel; box = (left, top, right, bottom)."""
    left, top, right, bottom = box
    for v in yticks:
        y = ymap(v)
        svg.line(left, y, right, y, "#e4e4e4")
        svg.text(left - 6, y + 4, (ylabels or tick_label)(v), "end")
    for v in xticks:
        x = xmap(v)
        svg.line(x, bottom, x, bottom + 4)
        svg.text(x, bottom + 17, tick_label(v), "middle")
    svg.add(f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" '
            f'fill="none" stroke="#000"/>')
    svg.text((left + right) / 2, bottom + 33, xlabel, "middle")
    cy = (top + bottom) / 2
    svg.text(left - 52, cy, ylabel, "middle", f' transform="rotate(-90 {left - 52} {fmt(cy)})"')


def load(arg):
    path, _, label = arg.partition("=")
    with open(path) as f:
        return json.load(f), label or path


def loss_chart(out, runs):
    curves = [([s["step"] for s in r["steps"]], [s["loss"] for s in r["steps"]], label)
              for r, label in runs]
    steps = curves[0][0]
    svg = Svg(680, 540)
    left, right = 80, 660
    xticks = nice_ticks(0, steps[-1])
    xmap = lambda s: left + (s - xticks[0]) / (xticks[-1] - xticks[0]) * (right - left)  # noqa

    # Top: the loss curves.
    top, bottom = 40, 280
    lo = min(min(c[1]) for c in curves)
    hi = max(max(c[1]) for c in curves)
    yticks = nice_ticks(lo, hi)
    ymap = lambda v: bottom - (v - yticks[0]) / (yticks[-1] - yticks[0]) * (bottom - top)  # noqa
    axes(svg, (left, top, right, bottom), xticks, yticks, xmap, ymap, "step", "loss")
    for i, (xs, ys, label) in enumerate(curves):
        dash = ' stroke-dasharray="6 4"' if i else ""
        svg.polyline([(xmap(x), ymap(y)) for x, y in zip(xs, ys)], COLORS[i % 4], dash)
        ly = top + 18 + 18 * i
        svg.line(right - 330, ly - 4, right - 302, ly - 4, COLORS[i % 4],
                 f' stroke-width="1.5"{dash}')
        svg.text(right - 296, ly, label)
    svg.text(left, 24, "Loss per step", extra=' font-weight="bold"')

    # Bottom: relative difference from the first run (0 drawn at the floor of the axis).
    top, bottom = 370, 490
    floor = 1e-12
    diffs = []
    for xs, ys, label in curves[1:]:
        rel = [abs(y - y0) / abs(y0) for y, y0 in zip(ys, curves[0][1])]
        diffs.append((xs, rel, label))
    hi = max([max(d[1]) for d in diffs] + [floor * 10])
    exps = list(range(int(math.log10(floor)), int(math.ceil(math.log10(hi))) + 1))
    exps = exps[::max(1, math.ceil(len(exps) / 6))]
    ymap = lambda v: bottom - (math.log10(max(v, floor)) - exps[0]) / (exps[-1] - exps[0]) \
        * (bottom - top)  # noqa
    axes(svg, (left, top, right, bottom), xticks, [10.0 ** e for e in exps], xmap, ymap,
         "step", "relative diff.",
         lambda v: f"\u2264 1e{round(math.log10(v))}" if v <= floor
         else f"1e{round(math.log10(v))}")
    for i, (xs, rel, label) in enumerate(diffs, start=1):
        pts = [(xmap(x), ymap(y)) for x, y in zip(xs, rel)]
        for x, y in pts:
            svg.add(f'<circle cx="{fmt(x)}" cy="{fmt(y)}" r="2.5" fill="{COLORS[i % 4]}"/>')
    worst = max(max(d[1]) for d in diffs)
    svg.text(left, 356, f"Relative difference from the first run's loss (largest {worst:.1e})",
             extra=' font-weight="bold"')
    svg.write(out)


def role(rank):
    first, last = rank["layers"]
    return (f"r{rank['rank']}: replica {rank['replica']} stage {rank['stage']}, layers "
            f"[{first}, {last}), {rank['micro_batch']} seq, x{rank['slowdown']:g}")


def stage_chart(out, runs):
    rows = []  # (title or None, label, [ms per part])
    for report, title in runs:
        steps = report["steps"][1:] if len(report["steps"]) > 1 else report["steps"]
        rows.append((title, None, None))
        for rank in report["ranks"]:
            r = rank["rank"]
            ms = [1e3 * sum(s["ranks"][r][key] for s in steps) / len(steps)
                  for key, _, _ in PARTS]
            rows.append((None, role(rank), ms))
    left, right, bar = 300, 660, 20
    height = 70 + 26 * len(rows) + 50
    svg = Svg(680, height)
    hi = max(sum(ms) for _, _, ms in rows if ms)
    xticks = nice_ticks(0, hi)
    xmap = lambda v: left + v / xticks[-1] * (right - left)  # noqa
    svg.text(16, 24, "Time per step and rank (mean over the steps after the first)",
             extra=' font-weight="bold"')
    y = 50
    for title, label, ms in rows:
        if title is not None:
            svg.text(16, y + 16, title, extra=' font-weight="bold"')
            y += 26
            continue
        svg.text(16, y + 14, label)
        x = left
        for v, (_, _, color) in zip(ms, PARTS):
            svg.rect(x, y, xmap(v) - left, bar, color)
            x += xmap(v) - left
        svg.text(x + 4, y + 14, f"{sum(ms):.1f} ms")
        y += 26
    for v in xticks:
        svg.line(xmap(v), y, xmap(v), y + 4)
        svg.text(xmap(v), y + 17, tick_label(v), "middle")
    svg.line(left, y, right, y)
    svg.text((left + right) / 2, y + 33, "ms per step", "middle")
    lx = 16
    for _, name, color in PARTS:
        svg.rect(lx, height - 18, 12, 12, color)
        svg.text(lx + 16, height - 8, name)
        lx += 30 + 7 * len(name)
    svg.write(out)


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("loss", "stages"):
        sys.exit(__doc__)
    runs = [load(a) for a in sys.argv[3:]]
    (loss_chart if sys.argv[1] == "loss" else stage_chart)(sys.argv[2], runs)


if __name__ == "__main__":
    main()
