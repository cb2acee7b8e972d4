"""Chapter 5's per-stage bandwidth bounds (`gpulab.euler.model`), the benchmark's undirected
cases and the book's bound table."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from gpulab.errors import GpulabError
from gpulab.euler import bench, model
from gpulab.euler.host import STAGES
from gpulab.euler.variants import REGISTRY
from tests.conftest import ON_SIMULATOR, skip_unless_runnable

DOCS = Path(__file__).resolve().parents[2] / "docs"

# A tiny run: 8 edges, vertex ids 0..3 (one sort pass), 3 cycles, 2 links, labelled in two rounds
# (2 splitters, then 1) with SPACING 4 / GROWTH 2, ranked with 2 splitters in 1 Wyllie round.
TINY_STATS = {"splitters": [2, 1], "label_rounds": 2, "links": 2, "cycles": 3, "forest_rounds": 1,
              "rank_splitters": 2, "rank_rounds": 1, "dart_labelling": {"splitters": [4], "label_rounds": 1}}
TINY_PARAMS = {"SPACING": 4, "GROWTH": 2}
# by hand, from the docstrings' counts
TINY_DIRECTED = {
    "validate": 2 * 8 * 4,                                    # src and dst read once
    "pairing": 2 * 8 * (4 + 12) + 20 * 8,                     # two 1-pass argsorts, then pair
    # 3 picks (the last spacing, 2, was not 1; the first writes own), walks, 24 B a splitter,
    # jumps (2 splitters: 1 round of 24 B + unpack 12 B each; 1 splitter: unpack only), label_from_owner
    "labelling": 3 * 4 * 8 + 8 * 8 + 24 * 3 + (24 * 2 * 1 + 12 * 2) + 12 * 1 + 12 * 8,
    "circuit_graph": 16 * 8 + 20 * 2 + 12 * 3,
    "spanning_forest": 8 + 20 * 2 + 5 * 3 + 12 * 3,
    "splice": 8 + 24 * 3,
    "ranking": 12 * 8 + 36 * 2 + 24 * 1 * 2,
}


def _ruling(n, stats):
    return model.label_ruling_set_bytes(n, stats, TINY_PARAMS)


def test_the_byte_model_by_hand():
    got = model.stage_bytes(8, 4, TINY_STATS, TINY_PARAMS, model.label_ruling_set_bytes,
                            model.rank_ruling_set_bytes)
    assert got == TINY_DIRECTED
    assert TINY_DIRECTED["labelling"] == 412 and TINY_DIRECTED["ranking"] == 216
    und = model.stage_bytes(8, 4, TINY_STATS, TINY_PARAMS, model.label_ruling_set_bytes,
                            model.rank_ruling_set_bytes, directed=False)
    # the half-edges: keys written (16 B an edge), a 1-pass argsort of 16 keys, odd-degree scan,
    # dart successors; the 16 darts labelled (1 round, 2 picks, 4 splitters, 2 jump rounds)
    darts = 2 * 4 * 16 + 8 * 16 + 24 * 4 + (24 * 4 * 2 + 12 * 4) + 12 * 16
    # the orientation's pairing and labels come from the darts: no directed pairing or labelling
    assert und["pairing"] == 40 * 8 + 16 * (4 + 12)
    orient = 16 * 8 + 16 * 8  # both darts' labels and both ends read; oriented ends, direction, label written
    dart_pairs = 8 * 8 + 8 * 8 + 4 * 8 + 12 * 8  # order, every other key, one direction; three int32 written
    scatter = 8 * 8 + 4 * 8  # the two orders read, succ written
    assert und["labelling"] == darts + orient + dart_pairs + scatter
    # each trail walked once (TRAILS): 2 splitter edges, then 1, with two walkers each
    trails = model.stage_bytes(8, 4, {**TINY_STATS, "trail_splitters": [2, 1], "trail_rounds": 2},
                               {**TINY_PARAMS, "TRAILS": 1}, model.label_ruling_set_bytes,
                               model.rank_ruling_set_bytes, directed=False)
    # 3 picks (the first writes town), 8 B a splitter, every edge claimed (successor read, owner swapped),
    # 28 B a splitter's two walkers, jumps (4 walkers: 2 rounds; 2 walkers: 1 round; unpack 12 B each)
    walks = 3 * 4 * 8 + 8 * 3 + 8 * 8 + 28 * 3 + (24 * 4 * 2 + 12 * 4) + (24 * 2 * 1 + 12 * 2)
    orient_trails = 20 * 8 + 16 * 8  # owner, two cycle labels, both ends read; four arrays written
    assert trails["labelling"] == walks + orient_trails + dart_pairs + scatter
    assert trails["pairing"] == und["pairing"]
    assert {k: v for k, v in und.items() if k not in ("pairing", "labelling")} == \
        {k: v for k, v in TINY_DIRECTED.items() if k not in ("pairing", "labelling")}


@pytest.mark.parametrize("max_key, passes", [(0, 1), (255, 1), (256, 2), (2**24 - 1, 3), (2**24, 4), (2**31 - 2, 4)])
def test_sort_passes(max_key, passes):
    assert model.sort_passes(max_key) == passes
    assert model.sort_bytes(10, max_key) == 10 * (16 + 16 * (passes - 1))


def test_wyllie_and_jump_counts():
    E = 1000
    assert model.rank_wyllie_bytes(E, {"rank_rounds": 10}) == 24 * E + 240 * E
    assert model.rank_wyllie_bytes(E, {}) == 24 * E + 24 * E * 10  # ceil(log2 1000) rounds when unrecorded
    assert model.label_jump_bytes(E, {"label_rounds": 3}, {}) == 24 * E + 72 * E
    # the last round's spacing 1: no extra pick after it
    assert (model.label_ruling_set_bytes(E, {"splitters": [5, 0, 7], "label_rounds": 3}, {"SPACING": 4, "GROWTH": 2})
            == 3 * 4 * E + 8 * E + 24 * 12 + (24 * 5 * 3 + 60) + 0 + (24 * 7 * 3 + 84) + 12 * E)


def _record(label="deep-42M", E=8, directed=True, stages=None):
    size = {"kind": "deep", "E": E} if directed else {"kind": "deep", "E": E, "directed": False}
    return {"label": label, "variant": "ruling_set", "backend": "numba", "size": size, "median_ms": 1.0,
            "graph": {"kind": "deep", "edges": E, "vertices": 4, "max_vertex": 3},
            "stats": TINY_STATS, "params": TINY_PARAMS,
            "stages_ms": stages or {s: 0.5 + i for i, s in enumerate(STAGES)}}


def _result(records, extra=None):
    res = {"date": "2026-11-26T00:00:00Z", "device": {"name": "NVIDIA H200", "mode": "gpu"}, "records": records}
    if extra is not None:
        res["extra"] = extra
    return res


def test_bound_rows_and_finalize():
    rec = _record()
    rows = model.bound_rows(_result([rec, _record(label="deep-2^20"), {**_record(), "backend": "cpu"}]), 2.0)
    assert [r["stage"] for r in rows] == list(STAGES)  # only the 42M GPU record
    for r in rows:
        b = TINY_DIRECTED[r["stage"]]
        assert r["GB moved"] == pytest.approx(b / 1e9)
        assert r["bound ms"] == pytest.approx(b / 2e9 * 1e3)
        assert r["gap ×"] == pytest.approx(rec["stages_ms"][r["stage"]] / r["bound ms"])
    assert len(model.bound_rows(_result([rec]), 2.0, labels=["deep-2^20"])) == 0
    res = _result([_record(), _record(directed=False), {**_record(), "backend": "cpu", "stages_ms": None}],
                  extra={"copy_bandwidth_GBps": 4000.0})
    bench.finalize(res)
    a, u, cpu = res["records"]
    assert a["stage_bytes"] == TINY_DIRECTED
    assert a["stage_bounds_ms"]["pairing"] == pytest.approx(TINY_DIRECTED["pairing"] / 4e12 * 1e3)
    assert u["stage_bytes"]["pairing"] > a["stage_bytes"]["pairing"] and "stage_bytes" not in cpu
    res = _result([_record()], extra={"copy_bandwidth_GBps": None})  # the simulator: bytes, no bounds
    bench.finalize(res)
    assert res["records"][0]["stage_bytes"] == TINY_DIRECTED and "stage_bounds_ms" not in res["records"][0]


def _hook():
    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        import bench_tables
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    return bench_tables


def test_write_bounds_picks_its_bandwidth_and_the_book_renders_it(tmp_path):
    bench_dir = tmp_path / "benchmarks"
    bench_dir.mkdir()
    src = bench_dir / "euler-h200.json"
    src.write_text(json.dumps(_result([_record()])))
    data = json.loads(model.write_bounds(src, bench_dir).read_text())
    assert data["copy bandwidth GB/s"] == 4800.0 and data["bandwidth source"].startswith("datasheet")
    (bench_dir / "radix-model-h200.json").write_text(json.dumps({"bandwidth TB/s": 4.0}))
    data = json.loads(model.write_bounds(src, bench_dir).read_text())
    assert data["copy bandwidth GB/s"] == 4000.0 and "measured" in data["bandwidth source"]
    src.write_text(json.dumps(_result([_record()], extra={"copy_bandwidth_GBps": 2.0})))
    path = model.write_bounds(src, bench_dir)
    data = json.loads(path.read_text())
    assert data["copy bandwidth GB/s"] == 2.0 and data["bandwidth source"].endswith("in this run")
    gap = {r["stage"]: r["gap ×"] for r in data["rows"]}
    assert gap["validate"] == pytest.approx(0.5 / (64 / 2e9 * 1e3))
    page = type("P", (), {"file": type("F", (), {"src_uri": "chapters/x.md"})()})()
    md = f'<!-- gpulab:rows {path.stem} cols="size|stage|GB moved|bound ms|measured ms|gap ×" -->\n'
    hook = _hook()
    out = hook.on_page_markdown(md, page, {"docs_dir": str(tmp_path)}, None)
    assert "| size | stage | GB moved | bound ms | measured ms | gap × |" in out
    assert f"| deep-42M | validate | {hook.num(64 / 1e9)} | {hook.num(64 / 2e9 * 1e3)} | 0.500 | 15,600 |" in out


def test_the_committed_bounds_are_those_of_the_committed_run():
    """euler-bounds-h200.json is what `write_bounds` makes of the committed H200 run now."""
    committed = json.loads((DOCS / "benchmarks" / "euler-bounds-h200.json").read_text())
    result = json.loads((DOCS / "benchmarks" / "euler-h200.json").read_text())
    bw, _ = model.copy_bandwidth_of(result, DOCS / "benchmarks")
    assert committed["copy bandwidth GB/s"] == bw
    assert committed["rows"] == json.loads(json.dumps(model.bound_rows(result, bw, defaults_only=True)))
    stages = {(r["size"], r["backend"]): r for r in committed["rows"] if r["stage"] == "pairing"}
    assert set(stages) == {(s, b) for s in ("deep-42M", "shallow-42M") for b in ("numba", "cuda-c")}


def test_the_benchmark_has_undirected_cases():
    full = {c.label: c for c in bench.full_cases()}
    assert full["undirected-deep-42M"].size == {"kind": "deep", "E": bench.M42, "directed": False}
    assert any(c.label.startswith("undirected-") for c in bench.cases(quick=True) + bench.cases(quick=False))
    cpu = REGISTRY.get("hierholzer", "cpu")
    with pytest.raises(GpulabError, match="directed graphs only"):
        bench.runner(cpu, {"E": 4, "kind": "deep", "directed": False, "cpu_calls": {}})
    if ON_SIMULATOR:
        assert bench.copy_bandwidth_GBps() is None


def test_the_undirected_case_runs_and_is_checked(rng):
    """The simulator's undirected case: the undirected pipeline, checked on the host against the
    input's ends and on the device; a flipped direction fails the check; the run's counts feed
    the byte model (the trails' walks among them) and its tree links are the model's c - 1."""
    v = REGISTRY.get("ruling_set", "numba")
    skip_unless_runnable(v)
    case = bench._undirected("deep", 64)
    state = bench.setup(case, rng)
    try:
        ok, why = bench.check(v, state)
        assert ok and "checked on the host" in why, why
        plan = state["plans"][v.key]
        res = bench.runner(v, state)()
        out, fw, m, tail, head = res
        assert m == 64
        stats = dict(plan.stats)
        assert plan.params["TRAILS"] == 1 and "dart_labelling" not in stats  # each trail walked once
        assert sum(stats["trail_splitters"]) <= 64 and stats["trail_rounds"] >= 1
        tree = plan.buf("tree", np.uint8)[:64].copy_to_host()
        assert int(tree.sum()) == stats["cycles"] - 1  # the splice's tree links: c - 1 of them
        rec = {"label": case.label, "variant": v.name, "backend": v.backend, "size": case.size,
               "graph": {**state["graph"], "max_vertex": plan.vmax}, "stats": stats, "params": plan.params,
               "stages_ms": {s: 1.0 for s in STAGES}}
        sb = model.record_bytes(rec)
        directed = model.record_bytes({**rec, "size": {"kind": "deep", "E": 64}})
        # the trails' walks, then the orientation and its pairing (80 B an edge) instead of the directed labelling
        assert sb["labelling"] > directed["labelling"] + 2 * directed["validate"]
        assert sb["labelling"] == model.label_trails_bytes(64, stats, plan.params) + 36 * 64 + 44 * 64
        h = fw[:64].copy_to_host()
        src, dst = bench._host_graph(state)
        edges = out[:64].copy_to_host()
        i = next(j for j in range(64) if src[edges[j]] != dst[edges[j]])  # a self-loop walks the same either way
        h[i] ^= 1
        fw[:64].copy_to_device(h)
        bad, why = bench._check_undirected(plan, state, (out, fw, m, tail, head))
        assert bad is None and "not an undirected Euler circuit" in why
    finally:
        bench.teardown(state)
