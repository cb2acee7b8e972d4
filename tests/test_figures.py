"""The book's figures and charts are legible at page width (issue 27).

Every image the book embeds (``![...](x.svg)`` in docs/, and the chart the mkdocs hook puts under
each ``<!-- gpulab:bench ... -->`` table) must be an SVG whose text, as shown on the page, is at
least `MIN_PX` px, and a chart's legend has at most `MAX_LEGEND` entries.

How big text is on the page: an ``<img>`` of an SVG is shown ``min(CONTENT_PX, intrinsic width)``
px wide (mkdocs-material: ``max-width: 100%``), the intrinsic width being the ``width``
attribute (matplotlib writes pt: 1 pt = 4/3 px). A text of ``font-size`` f (user units of the
``viewBox``) is then ``f × displayed width / viewBox width`` px. ``CONTENT_PX`` = 688 px is the
content column of the built site in a 1280 × 900 window (measured with headless Chromium:
``.md-content__inner``'s width less its padding, on every chapter page).

No GPU, no site build: the SVGs are parsed, and the charts are redrawn from the committed
benchmark JSON (matplotlib) to check that they are up to date.
"""

from __future__ import annotations

import importlib.util
import random
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CONTENT_PX = 688   # the content column at a 1280 px window (see the module docstring)
MIN_PX = 11.0
MAX_LEGEND = 6
SVG = "{http://www.w3.org/2000/svg}"
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.(?:svg|png|jpe?g|gif))\)")
BENCH = re.compile(r"<!-- gpulab:bench (\S+) (\S+)((?:\s+[\w-]+=\"[^\"]*\")*) -->")
FONT = (re.compile(r"font-size:\s*([\d.]+)px"), re.compile(r"font:\s*(?:[\w-]+\s+)*([\d.]+)px"))


# ---------------------------------------------------------------------- measuring an SVG

def displayed_scale(root: ET.Element, content_px: float = CONTENT_PX) -> float:
    """Page px per SVG user unit, for an ``<img>`` of this SVG in the content column."""
    width = root.get("width")
    m = re.fullmatch(r"([\d.]+)(pt|px)?", width or "")
    assert m and root.get("viewBox"), f"an SVG needs a width in pt or px and a viewBox (width={width!r})"
    intrinsic = float(m.group(1)) * (4 / 3 if m.group(2) == "pt" else 1)
    return min(content_px, intrinsic) / float(root.get("viewBox").split()[2])


def text_sizes(path: Path, content_px: float = CONTENT_PX) -> list[tuple[float, str]]:
    """(size on the page in px, text) for every piece of text of the SVG (``text``/``tspan``
    with characters of its own; the size of the nearest element that sets one)."""
    root = ET.parse(path).getroot()
    k = displayed_scale(root, content_px)
    out = []

    def walk(el, size):
        style = el.get("style", "")
        for f in FONT:
            if m := f.search(style):
                size = float(m.group(1))
                break
        if el.get("font-size"):
            size = float(el.get("font-size").removesuffix("px"))
        if el.tag in (SVG + "text", SVG + "tspan") and (el.text or "").strip():
            assert size is not None, f"{path.name}: text {el.text!r} without a font size"
            out.append((size * k, el.text.strip()))
        for child in el:
            walk(child, size)

    walk(root, None)
    return out


def legend_entries(path: Path) -> list[int]:
    """For each matplotlib legend (``<g id="legend_N">``) of the SVG: its texts (entries, and the
    title if it has one)."""
    root = ET.parse(path).getroot()
    return [sum(1 for c in g if c.tag == SVG + "g" and (c.get("id") or "").startswith("text_"))
            for g in root.iter(SVG + "g") if re.fullmatch(r"legend_\d+", g.get("id") or "")]


# ---------------------------------------------------------------------- what the book embeds

def embedded() -> dict[Path, list[str]]:
    """Every image file the book shows -> the pages that show it."""
    found: dict[Path, list[str]] = {}
    for md in sorted(DOCS.rglob("*.md")):
        text = md.read_text()
        where = str(md.relative_to(ROOT))
        for rel in IMAGE.findall(text):
            if "://" not in rel:
                found.setdefault((md.parent / rel).resolve(), []).append(where)
        for chapter, dev, _ in BENCH.findall(text):
            stem = DOCS / "benchmarks" / f"{chapter}-{dev}"
            if stem.with_suffix(".json").exists():  # (the hook: the SVG, else the PNG)
                chart = next((stem.with_suffix(e) for e in (".svg", ".png") if stem.with_suffix(e).exists()),
                             stem.with_suffix(".svg"))
                found.setdefault(chart, []).append(where + " (bench marker)")
    return found


IMAGES = embedded()
SVGS = sorted(p for p in IMAGES if p.suffix == ".svg")


def test_the_book_embeds_its_figures_and_charts():
    assert len(SVGS) >= 20, SVGS  # 15 figures + 7 charts when this test was written
    assert any("benchmarks" in p.parts for p in SVGS) and any("figures" in p.parts for p in SVGS)


def test_every_embedded_image_is_an_svg_that_exists():
    """A PNG's text cannot be measured (nor read at another zoom): every figure is an SVG."""
    bad = [f"{p.relative_to(ROOT)} (in {', '.join(pages)})" for p, pages in IMAGES.items()
           if p.suffix != ".svg" or not p.exists()]
    assert not bad, ("not an SVG, or missing (charts: python docs/figures/make_charts.py):\n  "
                     + "\n  ".join(bad))


@pytest.mark.parametrize("path", SVGS, ids=lambda p: p.name)
def test_text_is_at_least_11px_at_page_width(path):
    sizes = text_sizes(path)
    assert sizes, f"{path.name}: no text found (text drawn as paths cannot be checked: svg.fonttype 'none')"
    small = sorted({(round(px, 1), t) for px, t in sizes if px < MIN_PX})
    assert not small, f"{path.name}: text under {MIN_PX} px at {CONTENT_PX} px page width: {small[:10]}"


@pytest.mark.parametrize("path", SVGS, ids=lambda p: p.name)
def test_legends_have_at_most_6_entries(path):
    assert all(n <= MAX_LEGEND for n in legend_entries(path)), (path.name, legend_entries(path))


def test_the_measure_itself(tmp_path):
    """The arithmetic on SVGs made for the purpose: a wide SVG is shrunk to the column, a narrow
    one shown at its own size (pt -> px), sizes inherited from a group, legends counted."""
    tmp = tmp_path / "probe.svg"
    wide = random.uniform(1.2, 3.0) * CONTENT_PX  # px, wider than the column
    f = random.uniform(6, 12)
    tmp.write_text(f'<svg xmlns="{SVG[1:-1]}" width="{wide}px" viewBox="0 0 {wide} 100">'
                   f'<g style="font-size: {f}px"><text>a</text></g>'
                   '<g id="legend_1">' + "".join(f'<g id="text_{i}"><text style="font-size: 9px">e</text></g>'
                                                 for i in range(7)) + '</g></svg>')
    (a, _), *rest = text_sizes(tmp)
    assert a == pytest.approx(f * CONTENT_PX / wide)
    assert rest[0][0] == pytest.approx(9 * CONTENT_PX / wide)
    assert legend_entries(tmp) == [7]
    narrow = random.uniform(100, CONTENT_PX * 0.7)  # pt: shown at 4/3 of it
    tmp.write_text(f'<svg xmlns="{SVG[1:-1]}" width="{narrow}pt" viewBox="0 0 {narrow} 50">'
                   f'<text style="font: {f}px sans-serif">b</text></svg>')
    assert text_sizes(tmp) == [(pytest.approx(f * 4 / 3), "b")]


# ---------------------------------------------------------------------- the charts

def _load_make_charts():
    spec = importlib.util.spec_from_file_location("make_charts", DOCS / "figures" / "make_charts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_charts_are_drawn_from_the_committed_json():
    """Every chart of docs/benchmarks/ names the JSON it was drawn from and that file's SHA-256
    (and the marker's sizes): a chart is not left behind when its benchmark is measured again."""
    mod = _load_make_charts()
    charts = sorted((DOCS / "benchmarks").glob("*.svg"))
    assert len(charts) >= 7
    sizes = {f"{c}-{d}": dict(re.findall(r"([\w-]+)=\"([^\"]*)\"", o)).get("sizes")
             for md in DOCS.rglob("*.md") for c, d, o in BENCH.findall(md.read_text())}
    for svg in charts:
        m = mod.STAMP.search(svg.read_text()[:1000])
        assert m, f"{svg.name}: not drawn by docs/figures/make_charts.py (no source comment)"
        data = ROOT / m.group(1)
        assert data.exists() and mod.digest(data) == m.group(2), \
            f"{svg.name} is older than {m.group(1)}: run python docs/figures/make_charts.py"
        want = f' sizes="{sizes[svg.stem]}"' if sizes.get(svg.stem) else ""
        assert m.group(3) == want, f"{svg.name}: drawn for{m.group(3) or ' the default sizes'}, the page asks{want or ' the default'}"


def _fake_result(rng: random.Random) -> dict:
    """A benchmark result with many variants, backends and unrelated sizes."""
    sizes = [f"case {i}" for i in range(rng.randint(2, 9))]
    variants = [f"variant_{i}" for i in range(rng.randint(6, 14))]
    backends = ["numba", "cuda-c", "cpu"][:rng.randint(2, 3)]
    recs = []
    for s in sizes:
        for v in variants:
            for b in backends:
                if rng.random() < 0.8:
                    t = 10 ** rng.uniform(-2, 13)
                    recs.append({"label": s, "variant": v, "backend": b, "throughput": t, "unit": "things/s",
                                 "peer": "the peer", "peer_median_ms": 1.0, "ratio_to_peer": rng.uniform(0.1, 10)})
    return {"chapter": "fake", "device": {"name": "Some GPU"}, "records": recs}


def test_a_chart_of_many_series_and_sizes_stays_legible(tmp_path):
    """`gpulab.benchmark.chart` on a fresh random result of up to 14 variants × 3 backends × 9
    sizes: one panel per size (at most 4, bars: no line joins two sizes), at most 4 legend
    entries (the backends and the peer), every text ≥ 11 px, log axes labelled as log."""
    from gpulab import benchmark

    rng = random.Random()
    result = _fake_result(rng)
    n_sizes = len({r["label"] for r in result["records"]})
    path = benchmark.chart(result, tmp_path / "c.svg")
    text = path.read_text()
    assert len(re.findall(r'<g id="axes_\d+"', text)) == min(n_sizes, benchmark.CHART_SIZES)
    series = {r["backend"] for r in result["records"] if r["label"] in
              list(dict.fromkeys(r["label"] for r in result["records"]))[:benchmark.CHART_SIZES]}
    assert legend_entries(path) == [len(series) + 1]
    assert min(px for px, _ in text_sizes(path)) >= MIN_PX
    assert "(log scale)" in text


def test_the_hook_embeds_the_svg_chart():
    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        import bench_tables
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    md = "<!-- gpulab:bench matmul h200 -->\n"
    page = type("P", (), {"file": type("F", (), {"src_uri": "chapters/x.md"})()})()
    out = bench_tables.on_page_markdown(md, page, {"docs_dir": str(DOCS)}, None)
    assert "(../benchmarks/matmul-h200.svg)" in out and ".png)" not in out
