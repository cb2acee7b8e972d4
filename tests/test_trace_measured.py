"""Traced beside measured: a `gpulab:trace` marker with `measured="..." size="..."` puts, next
to each count the simulator traced, the count Nsight Compute measured on a GPU for the numba
kernel (docs/hooks/trace_tables.py); a marker naming a size, variant or kernel that the metrics
JSON lacks fails the build; and the chapters' markers find their data in the committed JSONs."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

from tests.conftest import ROOT

DOCS = ROOT / "docs"
PER_REQUEST = ("global_load_sectors_per_request", "global_store_sectors_per_request", "shared_wavefronts_per_request")


def _load_hook():
    spec = importlib.util.spec_from_file_location("gpulab_trace_tables_measured", DOCS / "hooks" / "trace_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def hook():
    return _load_hook()


def _traced(rng, variant: str, kernel: str) -> dict:
    """A row as `gpulab trace --json` writes it (random counts, every kind of request > 0)."""
    t = {}
    for n, d in (("global_load_sectors", "global_load_requests"), ("global_store_sectors", "global_store_requests"),
                 ("shared_wavefronts", "shared_requests"), ("constant_wavefronts", "constant_requests")):
        t[d] = int(rng.integers(1, 500))
        t[n] = t[d] * int(rng.integers(1, 9))
    return {"variant": variant, "size": "n=3", "seconds": 0.1, "kernel": kernel, "launches": 1, "totals": t,
            "outputs": 10, "bytes_moved": 320, "bytes_per_output": 32.0, "by_line": []}


def _measured(rng, lo: int) -> dict:
    """One kernel's `record["metrics"]` entry: per-request ratios in [lo, lo + 10), ending in 5
    in the 3rd decimal (no traced ratio of _traced is shown like that)."""
    return {k: float(rng.integers(100 * lo, 100 * lo + 1000)) / 100 + 0.005 for k in PER_REQUEST}


def _metrics_json(records: list[dict]) -> dict:
    return {"schema": "gpulab-bench/1", "chapter": "toy", "date": "2026-01-02T03:04:05Z",
            "device": {"mode": "gpu", "name": "NVIDIA Toy GPU"}, "settings": {"quick": False}, "records": records}


def _record(variant: str, backend: str, label: str, metrics) -> dict:
    return {"chapter": "toy", "variant": variant, "backend": backend, "label": label, "size": {}, "metrics": metrics,
            "skipped": None}


def _body(text: str) -> list[list[str]]:
    rows = []
    for line in text.split("\n\n")[0].splitlines()[2:]:
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


@pytest.fixture()
def docs(tmp_path, rng):
    """A docs dir with a toy trace (two variants; `b` launches two kernels) and its metrics JSON:
    numba and CUDA C measured at two sizes, each in its own range of values (only numba's at
    size "big", in [10, 20), may show)."""
    (tmp_path / "benchmarks" / "metrics").mkdir(parents=True)
    rows = [_traced(rng, "a", "k_a"), _traced(rng, "b", "k_b"), _traced(rng, "b", "k_final")]
    (tmp_path / "benchmarks" / "trace-toy.json").write_text(json.dumps({"chapter": "toy", "rows": rows, "not_traced": []}))
    lo = {("numba", "big"): 10, ("numba", "small"): 20, ("cuda-c", "big"): 30, ("cuda-c", "small"): 40}
    m = {(v, b, s): {k: _measured(rng, lo[(b, s)]) for k in ks} for v, ks in (("a", ["k_a"]), ("b", ["k_b", "k_final"]))
         for b in ("numba", "cuda-c") for s in ("small", "big")}
    records = [_record(v, b, s, kernels) for (v, b, s), kernels in m.items()]
    records.append(_record("c", "cpu", "big", None))
    (tmp_path / "benchmarks" / "metrics" / "toy-gpu.json").write_text(json.dumps(_metrics_json(records)))
    return tmp_path, rows, m


def test_each_traced_count_has_the_numba_kernels_measured_count_beside_it(hook, docs):
    root, rows, m = docs
    page = '<!-- gpulab:trace toy measured="toy-gpu" size="big" -->\n'
    out = hook.on_page_markdown(page, None, {"docs_dir": str(root)}, None)
    body = _body(out)
    assert [r[0] for r in body] == ["`a`: `k_a`", "`b`: `k_b`", "`b`: `k_final`"]
    for cells, r in zip(body, rows):
        got = m[(r["variant"], "numba", "big")][r["kernel"]]
        t = r["totals"]
        for cell, (n, d), key in zip(cells[1:4], hook.PAIRS, PER_REQUEST):
            assert cell == f"{hook.num(t[n] / t[d])} / {hook.num(got[key])}"
        assert cells[4] == hook.num(t["constant_wavefronts"] / t["constant_requests"])  # traced only: no ncu count
    caption = out.strip().splitlines()[-1]
    assert "NVIDIA Toy GPU" in caption and "2026-01-02" in caption and "big" in caption
    assert '`gpulab bench toy --metrics --sizes "big"`' in caption and "--clock-control none" in caption
    # a path instead of a stem reads the same file
    same = hook.on_page_markdown('<!-- gpulab:trace toy measured="benchmarks/metrics/toy-gpu.json" size="big" -->\n',
                                 None, {"docs_dir": str(root)}, None)
    assert _body(same) == body


def test_a_record_that_was_not_profiled_shows_a_dash_and_the_reason(hook, docs):
    root, rows, m = docs
    path = root / "benchmarks" / "metrics" / "toy-gpu.json"
    data = json.loads(path.read_text())
    for r in data["records"]:
        if (r["variant"], r["backend"], r["label"]) == ("a", "numba", "big"):
            r["metrics"], r["skipped"] = None, "too big for constant memory: use another variant"
    path.write_text(json.dumps(data))
    out = hook.on_page_markdown('<!-- gpulab:trace toy measured="toy-gpu" size="big" -->\n', None,
                                {"docs_dir": str(root)}, None)
    first = _body(out)[0]
    t = rows[0]["totals"]
    assert first[1] == f"{hook.num(t['global_load_sectors'] / t['global_load_requests'])} / —"
    assert "Not measured: `a` (too big for constant memory)" in out


def test_a_marker_naming_what_the_metrics_json_lacks_fails_the_build(hook, docs):
    root, rows, m = docs
    config = {"docs_dir": str(root)}
    path = root / "benchmarks" / "metrics" / "toy-gpu.json"
    for marker, what in [('measured="nothing" size="big"', "does not exist"),
                         ('measured="toy-gpu" size="huge"', "no size 'huge'"),
                         ('measured="toy-gpu"', "go together")]:
        with pytest.raises(hook.Missing, match=what):
            hook.on_page_markdown(f"<!-- gpulab:trace toy {marker} -->\n", None, config, None)
    data = json.loads(path.read_text())
    without_b = [r for r in data["records"] if not (r["variant"] == "b" and r["backend"] == "numba" and r["label"] == "big")]
    path.write_text(json.dumps(dict(data, records=without_b)))
    with pytest.raises(hook.Missing, match="no numba record of 'b' at big"):
        hook.on_page_markdown('<!-- gpulab:trace toy measured="toy-gpu" size="big" -->\n', None, config, None)
    # only variant a: b's record is not needed
    assert "`k_a`" not in hook.on_page_markdown('<!-- gpulab:trace toy variants="a" measured="toy-gpu" size="big" -->\n',
                                                None, config, None).split("\n\n")[0].splitlines()[0]
    for r in data["records"]:
        if r["variant"] == "b" and r["metrics"]:
            r["metrics"].pop("k_final")
    path.write_text(json.dumps(data))
    with pytest.raises(hook.Missing, match="no kernel 'k_final'"):
        hook.on_page_markdown('<!-- gpulab:trace toy measured="toy-gpu" size="big" -->\n', None, config, None)


# ------------------------------------------------------------------ the book's markers

def _markers() -> list[tuple[str, re.Match]]:
    """(page, marker) of every `gpulab:trace` marker with `measured=` in the chapters."""
    mod = _load_hook()
    return [(p.name, m) for p in sorted((DOCS / "chapters").glob("*.md")) for m in mod.MARKER.finditer(p.read_text())
            if 'measured="' in m.group(0)]


def test_chapters_1_to_3_show_measured_counts(hook):
    pages = {name for name, _ in _markers()}
    assert {"ch1-matmul.md", "ch2-subset.md", "ch3-gp.md"} <= pages


@pytest.mark.parametrize("page,marker", _markers(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_measured_marker_finds_each_traced_kernel_in_the_committed_metrics(hook, page, marker):
    """Each traced row of the marker has the numba kernel's counts at that size (or a record
    that says why it was not profiled): no marker silently loses its measurements."""
    opts = dict(hook.OPT.findall(marker.group(3) or ""))
    trace = hook.load(DOCS, marker.group(2))
    metrics = hook.load_measured(DOCS, opts["measured"])
    assert metrics["chapter"] == trace["chapter"]
    variants, kernels = (opts[k].split("|") if opts.get(k) else None for k in ("variants", "kernels"))
    rows = hook._select(trace, variants, kernels)
    found = hook.measured_kernels(metrics, opts["size"], rows)  # raises Missing where one is absent
    assert set(found) == {(r["variant"], r["kernel"]) for r in rows}
    measured = [v for v in found.values() if isinstance(v, dict)]
    unmeasured = {v: why for (v, _), why in found.items() if not isinstance(why, dict)}
    assert len(unmeasured) <= 1 and all(unmeasured.values()), f"{page}: variants without measurements: {unmeasured}"
    assert all(v["global_load_sectors_per_request"] is not None for v in measured)
    text = hook.trace_table(trace, variants, kernels, metrics=metrics, size=opts["size"])
    assert metrics["device"]["name"] in text and len(_body(text)) <= hook.MAX_ROWS
