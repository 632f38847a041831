"""The HTML report of each kind of run, read back as a browser sees it (issue 14 item 5).

Three small real runs (snn_cuba on loihi, bep on cortex-m4, mlp on a100, each compared with
other profiles of its kind) are written as HTML once per module. Headless Chromium (Debian
``chromium``, installed by ``make``) loads a copy of each with a small script that writes every
image's decoded size into ``data-`` attributes, and the dumped DOM is checked: the headline, the
per-layer table with all its rows, every expected plot, every image decoded at its PNG's own
size. Without Chromium those tests skip; the checks of the file itself (CSV downloads, source
links, no external assets) run everywhere.
"""
import base64
import csv
import io
import shutil
import struct
import subprocess
from html.parser import HTMLParser

import pytest

import hw_profiles
from deploy import report as rp
from deploy import report_html
from deploy.formatting import format_energy
from deploy.runfile import read_run, write_run
from models import runner

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# the smallest settings that still exercise every section: 200 neurons for 50 ms (the
# in-degree kept at 40), 2 training epochs
KINDS = {
    "neuromorphic": ("snn_cuba", {"n": 200, "p": 0.2, "duration": 0.05}, ("loihi2",)),
    "bitwise": ("bep", {"epochs": 2}, ("cortex-m7",)),   # a 32-bit part, as the run
    "torch": ("mlp", {"epochs": 2}, ("jetson-orin", "x86-avx2")),
}
COMMON_PLOTS = {"by category", "by op", "scope depth 1", "scope depth 2", "comparison"}
EXPECTED_PLOTS = {
    "neuromorphic": COMMON_PLOTS | {"spike_raster", "spike_raster firing rates",
                                    "core_neurons_util", "core_synapse_bytes_util",
                                    "core_fan_in_util", "core_fan_out_util"},
    "bitwise": COMMON_PLOTS | {"energy per epoch", "train_error"},
    "torch": COMMON_PLOTS | {"energy per epoch", "train_loss"},
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """kind -> (html path, run, reports), each run written and read back as the CLI does."""
    out = {}
    root = tmp_path_factory.mktemp("html")
    for kind, (model, overrides, others) in KINDS.items():
        result = runner.run(model, overrides=overrides)
        write_run(root / f"{kind}.h5", result)
        run = read_run(root / f"{kind}.h5")
        reports = [run.ledger.price(run.profile)] + [
            run.ledger.price(hw_profiles.load(p)) for p in others]
        path = rp.html_report(run, reports, root / f"{kind}.html")
        out[kind] = (path, run, reports)
    return out


class Dom(HTMLParser):
    """What the tests read of a document: elements with an id, tables (id, rows of cell
    text, the CSV link before each), images, links, and text outside links."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.ids, self.tables, self.images, self.links = {}, [], [], []
        self.loose_text, self.tags = [], []
        self._part, self._row, self._csv, self._cell, self._in_a = "", [], None, None, 0
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if "id" in a:
            self.ids[a["id"]] = tag
        if tag == "a":
            self._in_a += 1
            self.links.append(a)
            if a.get("class") == "csv":
                self._csv = a
        elif tag == "img":
            self.images.append(a)
        elif tag == "table":
            self.tables.append({"id": a.get("id"), "csv": self._csv, "header": [],
                                "rows": []})
            self._csv = None
        elif tag in ("thead", "tbody"):
            self._part = tag
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "a":
            self._in_a -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr":
            t = self.tables[-1]
            if self._part == "thead":
                t["header"] = self._row
            else:
                t["rows"].append(self._row)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if not self._in_a:
            self.loose_text.append(data)


def csv_rows(link: dict) -> list[list[str]]:
    prefix = "data:text/csv;charset=utf-8;base64,"
    assert link["href"].startswith(prefix)
    return list(csv.reader(io.StringIO(base64.b64decode(link["href"][len(prefix):])
                                       .decode("utf-8"))))


def png_size(src: str) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk (bytes 16-24 of the file)."""
    png = base64.b64decode(src.split(",", 1)[1])
    return struct.unpack(">II", png[16:24])


_PROBE = ("<script>window.addEventListener('load',()=>{for(const i of document.images)"
          "{i.dataset.w=i.naturalWidth;i.dataset.h=i.naturalHeight}"
          "document.body.dataset.probed='1'})</script>")


def dumped_dom(path, tmp_path) -> str:
    """The DOM Chromium builds from a copy of ``path`` with the size probe injected."""
    copy = tmp_path / f"probe-{path.name}"
    copy.write_text(path.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"),
                    encoding="utf-8")
    res = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          "--virtual-time-budget=10000", "--dump-dom", copy.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian chromium (make installs it)")
@pytest.mark.parametrize("kind", list(KINDS))
def test_report_renders_in_chromium(built, kind, tmp_path):
    path, run, reports = built[kind]
    dom = Dom(dumped_dom(path, tmp_path))
    body = next(a for t, a in dom.tags if t == "body")
    assert body.get("data-probed") == "1"       # the probe ran after every image loaded
    assert dom.ids["headline"] == "section"
    assert dom.ids["layers"] == "table"
    layers = next(t for t in dom.tables if t["id"] == "layers")
    expected = report_html.layer_rows(run, reports[0])[0]
    assert len(layers["rows"]) == len(expected) >= 1     # every row, none cut
    assert [r[0] for r in layers["rows"]] == [r.name for r in expected]
    plots = [i for i in dom.images if i.get("class") == "plot"]
    assert len(plots) == len(dom.images)                 # every image is a plot
    assert {i["alt"] for i in plots} == EXPECTED_PLOTS[kind]
    for img in plots:
        # decoded by the browser at the PNG's own size (a broken image reads 0 x 0)
        w, h = png_size(img["src"])
        assert (int(img["data-w"]), int(img["data-h"])) == (w, h) and w > 0 and h > 0


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian chromium (make installs it)")
@pytest.mark.parametrize("kind", list(KINDS))
def test_report_fits_1280_px(built, kind, tmp_path):
    """Nothing past a 1280 px viewport, no overlapping text, no legend over data
    (tests/browser_layout.py; issue 35 item 5)."""
    from browser_layout import page_problems
    assert page_problems(built[kind][0], tmp_path, width=1280) == []


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian chromium (make installs it)")
@pytest.mark.parametrize("kind", list(KINDS))
def test_report_fits_800_px(built, kind, tmp_path):
    """On an 800 px screen the page scrolled sideways (the citations' long URLs and the
    layer table passed the edge); a wide table now scrolls in its own box and a URL
    wraps."""
    from browser_layout import page_problems
    assert page_problems(built[kind][0], tmp_path, width=800) == []


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_table_downloads_as_its_rows(built, kind):
    path, run, reports = built[kind]
    dom = Dom(path.read_text(encoding="utf-8"))
    assert dom.tables and all(t["csv"] is not None for t in dom.tables)
    names = [t["csv"]["download"] for t in dom.tables]
    assert len(set(names)) == len(names) and all(n.endswith(".csv") for n in names)
    # these show rounded figures and download full-precision ones, with their own header
    full = {"layers.csv", "comparison.csv", "epochs.csv"}
    for t in dom.tables:
        header, *rows = csv_rows(t["csv"])
        if t["csv"]["download"] in full:
            assert len(rows) == len(t["rows"])
            assert [r[0] for r in rows] == [r[0] for r in t["rows"]]
        else:
            assert [header, *rows] == [t["header"], *t["rows"]]
    # the layer CSV's energies (J) are the table's energies before formatting
    layers = next(t for t in dom.tables if t["id"] == "layers")
    header, *rows = csv_rows(layers["csv"])
    col = header.index("energy_j")
    assert [format_energy(float(r[col])) for r in rows] == [r[6] for r in layers["rows"]]
    assert [float(r[col]) for r in rows] == [r.energy_j for r in report_html.layer_rows(
        run, reports[0])[0]]


@pytest.mark.parametrize("kind", list(KINDS))
def test_sources_are_links(built, kind):
    path, _, reports = built[kind]
    dom = Dom(path.read_text(encoding="utf-8"))
    loose = "".join(dom.loose_text)
    assert "http://" not in loose and "https://" not in loose   # every URL is in a link
    hrefs = {a["href"] for a in dom.links}
    cited = [u for r in reports for cite in r.entries.values()
             for u in report_html._URL.findall(cite)]
    assert cited     # shipped profiles cite URLs
    for url in cited:
        url = url.rstrip(".,;:")
        assert (url if url.startswith("http") else "https://doi.org/" + url[4:].lstrip()) \
            in hrefs


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_file_has_no_external_assets(built, kind):
    text = built[kind][0].read_text(encoding="utf-8")
    dom = Dom(text)
    for tag, a in dom.tags:
        assert tag not in ("link", "script", "iframe", "object", "embed")
        if "src" in a:
            assert a["src"].startswith("data:image/png;base64,")
    assert "url(" not in text and "@import" not in text
