"""Layout checks of an HTML page as headless Chromium lays it out, and of matplotlib figures
before they become PNGs: reusable by any test of a page neuroedge writes (the run report,
``tests/deploy/test_report_layout.py``; the sweep summary page can be pointed at it the same
way).

:func:`page_problems` loads a copy of the page at a given window width with a small script
that measures, after layout: the page's horizontal overflow and the outermost elements whose
right edge passes the viewport; in every inline ``<svg>``, text boxes that overlap one another
and a legend (matplotlib's ``g#legend_N``) drawn over data points (``line2d``/``PathCollection``
marks, sampled along their paths). It writes the findings as JSON into the DOM, which
``--dump-dom`` hands back. :func:`figure_problems` does the same text and legend checks on a
:class:`matplotlib.figure.Figure` from its renderer's extents (the report embeds its plots as
PNG, whose text a browser cannot see).
"""
from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

_PROBE = r"""<script>
window.addEventListener('load', () => {
  const vw = document.documentElement.clientWidth, out = {viewport: vw, overflow: [],
    svg_text_overlaps: [], legend_over_data: []};
  out.scroll_width = document.documentElement.scrollWidth;
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ')[0] : '');
  // outermost elements past the right edge (their children are not listed again)
  const walk = e => {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 0.5) {
      out.overflow.push(name(e) + ' right=' + Math.round(r.right) + 'px'); return; }
    // a box that scrolls (or clips) sideways keeps its content inside itself
    if (getComputedStyle(e).overflowX !== 'visible') return;
    for (const c of e.children) walk(c);
  };
  walk(document.body);
  const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 &&
    a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  for (const svg of document.querySelectorAll('svg')) {
    const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
      .map(t => [t.textContent.trim(), t.getBoundingClientRect()]);
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++)
      if (hit(texts[i][1], texts[j][1]))
        out.svg_text_overlaps.push(texts[i][0] + ' / ' + texts[j][0]);
    for (const legend of svg.querySelectorAll('g[id^="legend"]')) {
      const box = legend.getBoundingClientRect();
      const marks = [...svg.querySelectorAll('g[id^="line2d"] path, g[id^="PathCollection"] use')]
        .filter(m => !m.closest('g[id^="legend"], g[id^="xtick"], g[id^="ytick"], ' +
                                'g[id^="matplotlib.axis"]'));
      let n = 0;
      for (const m of marks) {
        const pts = [];
        if (m.tagName === 'path' && m.getTotalLength) {
          const len = m.getTotalLength(), ctm = m.getScreenCTM();
          for (let k = 0; k <= 50; k++) {
            const p = m.getPointAtLength(len * k / 50).matrixTransform(ctm);
            pts.push([p.x, p.y]);
          }
        } else {
          const r = m.getBoundingClientRect();
          pts.push([(r.left + r.right) / 2, (r.top + r.bottom) / 2]);
        }
        n += pts.filter(([x, y]) => x > box.left && x < box.right && y > box.top &&
                                    y < box.bottom).length;
      }
      if (n) out.legend_over_data.push(legend.id + ': ' + n + ' data point(s) under it');
    }
  }
  document.body.dataset.layout = JSON.stringify(out);
});
</script>"""


def page_layout(path: str | Path, tmp_dir: str | Path, width: int = 1280,
                height: int = 2000) -> dict:
    """What the probe measured on ``path`` at ``width`` x ``height`` px: ``viewport``,
    ``scroll_width``, ``overflow`` (outermost elements past the right edge),
    ``svg_text_overlaps`` and ``legend_over_data``. Needs :data:`CHROMIUM`."""
    path = Path(path)
    copy = Path(tmp_dir) / f"layout-{path.name}"
    text = path.read_text(encoding="utf-8")
    copy.write_text(text.replace("</body>", _PROBE + "</body>") if "</body>" in text
                    else text + _PROBE, encoding="utf-8")
    res = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          "--hide-scrollbars", f"--window-size={width},{height}",
                          "--virtual-time-budget=10000", "--dump-dom", copy.as_uri()],
                         capture_output=True, text=True, timeout=180)
    if res.returncode != 0:
        raise RuntimeError(f"chromium failed on {copy}: {res.stderr[-2000:]}")
    m = re.search(r'data-layout="([^"]*)"', res.stdout)
    if m is None:
        raise RuntimeError(f"the layout probe did not run on {copy} (no data-layout in the DOM)")
    return json.loads(html.unescape(m[1]))


def page_problems(path: str | Path, tmp_dir: str | Path, width: int = 1280) -> list[str]:
    """Every layout problem of ``path`` at ``width`` px, one line each (empty: none)."""
    lay = page_layout(path, tmp_dir, width)
    out = [f"page is {lay['scroll_width']} px wide in a {lay['viewport']} px viewport"
           ] if lay["scroll_width"] > lay["viewport"] else []
    out += [f"past the right edge: {x}" for x in lay["overflow"]]
    out += [f"svg text overlaps: {x}" for x in lay["svg_text_overlaps"]]
    out += [f"svg legend over data: {x}" for x in lay["legend_over_data"]]
    return out


def figure_problems(fig) -> list[str]:
    """Overlapping text and legends over data in a matplotlib figure, from its renderer's
    extents: tick labels of one axis that overlap, any two texts of the figure that overlap
    (titles, axis labels, legend entries against tick labels), and a legend box with data
    points of its axes (lines' vertices, collections' offsets, bars' tops) inside it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()                           # lays out: extents are final after this
    renderer = canvas.get_renderer()
    from matplotlib.text import Text
    undrawn = {id(label) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
               for label in _undrawn_tick_labels(axis)}
    texts = [t for t in dict.fromkeys(fig.findobj(Text))   # findobj may meet one twice
             if t.get_visible() and t.get_text().strip() and id(t) not in undrawn]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    out = []
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1:]:
            if ba.overlaps(bb) and min(ba.width, bb.width) > 0:
                inter_w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
                inter_h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
                if inter_w > 0.5 and inter_h > 0.5:
                    out.append(f"text overlaps: {a!r} / {b!r}")
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        # a line's points along its segments (20 a segment), not only its vertices
        pts = [_along(line.get_transform().transform(line.get_xydata()))
               for line in ax.get_lines()]
        pts += [c.get_offset_transform().transform(c.get_offsets()) for c in ax.collections]
        pts += [ax.transData.transform([(p.get_x() + p.get_width() / 2, p.get_y() +
                                         p.get_height())]) for p in ax.patches
                if hasattr(p, "get_x")]
        pts = np.concatenate([p.reshape(-1, 2) for p in pts]) if pts else np.zeros((0, 2))
        inside = ((pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0)
                  & (pts[:, 1] < box.y1)).sum()
        if inside:
            out.append(f"legend over data: {int(inside)} point(s) of {ax.get_title()!r} "
                       "under the legend")
    return out


def _along(xy: np.ndarray, per_segment: int = 20) -> np.ndarray:
    """Points spread along the polyline ``xy`` ((n, 2) display coordinates)."""
    if len(xy) < 2:
        return xy
    t = np.linspace(0.0, 1.0, per_segment, endpoint=False)[None, :, None]
    return (xy[:-1, None] + t * (xy[1:, None] - xy[:-1, None])).reshape(-1, 2)


def _undrawn_tick_labels(axis):
    """Tick labels of ticks outside the axis's view: matplotlib keeps them visible but does
    not draw them."""
    lo, hi = sorted(axis.get_view_interval())
    for tick in axis.get_major_ticks() + axis.get_minor_ticks():
        if not lo <= tick.get_loc() <= hi:
            yield tick.label1
            yield tick.label2
