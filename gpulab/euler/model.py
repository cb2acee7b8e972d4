"""Chapter 5's bytes-moved model: what each stage of the pipeline must read and write, and the
time that takes at the device's copy bandwidth (its *bandwidth bound*).

Each function counts the bytes of one stage's passes as the pipeline
(`gpulab.euler.host.EulerPlan`) runs them, every element read or written once per
pass and perfectly coalesced: 4 bytes per int32, 8 per packed word, 1 per byte flag. The bound
ignores what makes a real pass dearer: a random 4-byte gather still moves a whole 32-byte
sector, a walk's loads depend on each other, and the host waits between rounds. The gap between
a stage's measured time and its bound is what those cost.

Terms of size c (cycles), L (links) or s (splitters) are counted where the pass is over them;
the few counters and flags are not. ``E`` is the number of edges, ``V`` the largest vertex id
plus one (the sorts' key range).

The bound of a stage is ``bytes / copy bandwidth``, where the copy bandwidth counts the bytes a
device-to-device copy reads and writes (the benchmark measures it once per run:
``extra.copy_bandwidth_GBps``).
"""

from __future__ import annotations

import json
from pathlib import Path

from gpulab.euler.host import STAGES, ceil_log2

WORD = 4  # an int32
PACKED = 8  # a packed (value, pointer) word of pointer jumping
DIGIT_BITS = 8  # the ideal radix sort's digit
DATASHEET_TBPS = 4.8  # the H200's HBM3e peak, read + write together


def sort_passes(max_key: int) -> int:
    """Passes of an ideal LSD radix sort with 8-bit digits over keys up to ``max_key``."""
    return max(1, -(-max(int(max_key), 1).bit_length() // DIGIT_BITS))


def sort_bytes(n: int, max_key: int) -> int:
    """A stable argsort of n int32 keys (chapter 4's sort, with the positions as values), ideal:
    one read of the keys for every pass's histogram (4 B a key), a first pass that reads the keys
    and writes keys and positions (12 B: the positions 0..n-1 come from the thread index), then
    every later pass reads and writes both (16 B)."""
    return n * (WORD + 3 * WORD + 4 * WORD * (sort_passes(max_key) - 1))


def validate_bytes(E: int, itemsize: int = 4) -> int:
    """**validate**: one reduction over ``src`` and one over ``dst`` (min and max); int32 inputs
    are used in place (no copy): 2·E·itemsize. int64 inputs are also written narrowed: + 8·E."""
    return 2 * E * itemsize + (2 * E * WORD if itemsize != WORD else 0)


def pairing_bytes(E: int, V: int) -> int:
    """**pairing**: two stable argsorts (by source, by destination; `sort_bytes`), then ``pair``
    reads the two orders and the two sorted key arrays (16 B an edge) and writes ``succ`` (4 B):
    20·E. A lower bound: the scatter runs in slices (`EulerPlan.scatter_slices`), each of which
    reads the two orders again (8 B an edge a slice), and its writes land on random sectors;
    past SCATTER_SLICES slices the scatter is a third sort (`EulerPlan.permute_by_sort`), which
    moves more bytes than this counts, in whole tiles."""
    return 2 * sort_bytes(E, V - 1) + 20 * E


def _picks(rounds: int, params: dict) -> int:
    """The ruling set's picks in a run of ``rounds`` rounds (`splitter_rounds`): one per round,
    and one more that finds nothing left unless the last round's spacing was 1."""
    spacing, growth = int(params.get("SPACING", 128)), int(params.get("GROWTH", 16))
    last = spacing
    for _ in range(rounds - 1):
        last = max(1, last // growth)
    return rounds + (0 if (rounds and last <= 1) else 1)


def label_ruling_set_bytes(E: int, stats: dict, params: dict) -> int:
    """**labelling**, ruling set (`label_ruling_set`): the first round's pick writes ``own`` (4·E),
    every later pick reads it (4·E a pick; one more pick finds nothing left unless the last round's
    spacing was 1); every pick writes 8 B a splitter (its slot, its owner); the walks read every edge's successor and
    write its owner once (8·E), and per splitter read its id and the next splitter's owner and
    write a packed word (16 B); each round's pointer jumping on its s splitters runs at most
    ceil(log2 s) rounds of 24 B (read a word, gather one, write one) a splitter, and unpacks
    them (12 B); ``label_from_owner`` reads the owner, gathers its label and writes it (12·E)."""
    splitters = list(stats.get("splitters") or [])
    picks = _picks(int(stats.get("label_rounds", len(splitters))), params)
    s_all = sum(splitters)
    jumps = sum(24 * s * ceil_log2(s) + 12 * s for s in splitters)
    kept = 12 * s_all if params.get("SUBLISTS") else 0  # each sublist's word and last edge
    return picks * 4 * E + 8 * E + 24 * s_all + jumps + 12 * E + kept


def label_jump_bytes(E: int, stats: dict, params: dict) -> int:
    """**labelling**, pointer jumping (`label_jump`): ``jump_init`` reads ``succ`` and writes a
    packed word (12·E), each of the J rounds reads a word, gathers one and writes one (24·E),
    ``unpack_labels`` reads the words and writes the labels (12·E)."""
    return 12 * E + 24 * E * int(stats.get("label_rounds", 0)) + 12 * E


def circuit_graph_bytes(E: int, links: int, cycles: int) -> int:
    """**circuit_graph**: ``list_nodes`` reads every label (4·E) and writes 12 B a cycle;
    ``find_links`` reads the sorted sources and the out-order (8·E), gathers every out-slot's
    label (4·E), writes 12 B a link and offers it to both ends' minimum (8 B): 16·E + 20·L + 12·c."""
    return 16 * E + 20 * links + 12 * cycles


def spanning_forest_bytes(E: int, links: int, cycles: int, rounds: int) -> int:
    """**spanning_forest**: clear the tree flags (1 B an edge); Borůvka's first round (its minima
    were taken with the links) reads every link (12 B), gathers both ends' minima (8 B) and writes
    a hook and a tree flag per cycle (5 B); every later round (``forest_rounds`` - 1 of them, each
    counted with all L links: an upper count) finds the minima again and hooks (40 B a link); the
    pointer jumping over the cycles reads and writes 12 B a cycle per round (one round counted)."""
    return E + 20 * links + 5 * cycles + max(int(rounds) - 1, 0) * 40 * links + 12 * cycles


def splice_bytes(E: int, cycles: int) -> int:
    """**splice**: one pass over the tree flags (1 B an edge); a tree link (c - 1 of them) and
    each run's end read an in- and an out-edge and write a successor (12 B each): E + 24·c."""
    return E + 24 * cycles


def rank_ruling_set_bytes(E: int, stats: dict) -> int:
    """**ranking**, splitters (`rank_ruling_set`): the pick reads nothing (a hash of the id) and
    writes 8 B a splitter (its id, its slot); ``walk_rank`` reads every successor (4·E) and per
    splitter its id, the next one's slot, and writes a packed word (16 B); Wyllie's J rounds on
    the s splitters (24 B each); ``write_ranked`` reads every successor again and writes every
    edge's place (8·E), and per splitter its id and its rank word (12 B): 12·E + 36·s + 24·J·s."""
    s, J = int(stats.get("rank_splitters", 0)), int(stats.get("rank_rounds", 0))
    return 12 * E + 36 * s + 24 * J * s


def rank_sublists_bytes(E: int, stats: dict) -> int:
    """**ranking** from the labelling's sublists (`rank_sublists`; `rank_ruling_set_bytes` where
    it fell back): clear s dirty flags and mark s sublist ends (1 + 8 B each, one a gather);
    ``list_cuts`` reads the tree flags (1·E) and per cut an in- and an out-edge, two owners, a
    splitter and writes 3 words (32 B); ``measure`` reads per piece its sublist word and flag
    (9 B) and writes a word (8 B), walking only the touched sublists and the cuts' pieces (their
    edges not counted: few); Wyllie's J rounds on the P pieces (24 B each); ``write_pieces``
    reads every successor and writes every edge's place (8·E), and per piece its splitter and
    word (12 B): 9·E + 9·s + 32·c + 29·P + 24·J·P."""
    if "rank_pieces" not in stats:
        return rank_ruling_set_bytes(E, stats)
    P, c, J = int(stats["rank_pieces"]), int(stats.get("rank_cuts", 0)), int(stats.get("rank_rounds", 0))
    s = P - c - 1
    return 9 * E + 9 * s + 32 * c + 29 * P + 24 * J * P


def rank_wyllie_bytes(E: int, stats: dict) -> int:
    """**ranking**, Wyllie (`rank_wyllie`): ``wyllie_init`` reads ``succ`` and writes a packed
    word (12·E), each of the ceil(log2 E) rounds 24·E, ``scatter_rank`` reads a word and writes
    the edge at its place (12·E)."""
    return 24 * E + 24 * E * int(stats.get("rank_rounds", ceil_log2(E)))


# the step each policy names -> its byte count (None: no model; the teaching steps' rounds depend
# on the graph's longest cycle, and partition's moves over the bus)
LABELLING = {"label_ruling_set": label_ruling_set_bytes, "label_jump": label_jump_bytes}
RANKING = {"rank_ruling_set": rank_ruling_set_bytes, "rank_wyllie": rank_wyllie_bytes,
           "rank_sublists": rank_sublists_bytes}


def orient_extra_bytes(E: int, V: int) -> int:
    """**pairing** of an undirected graph, in place of the directed one: ``half_keys`` reads
    both ends and writes 2·E keys (16·E), the argsort of 2·E half-edges (`sort_bytes`),
    ``dart_succ`` reads the order (8·E) and, in its slice at 0, the sorted keys (8·E), and writes
    2·E dart successors (8·E). (A lower bound, as `pairing_bytes`: each further slice reads the
    order again; ``odd_vertices`` runs only where some degree is odd.)"""
    return 40 * E + sort_bytes(2 * E, V - 1)


def label_trails_bytes(E: int, stats: dict, params: dict) -> int:
    """The closed trails walked once (`gpulab.euler.labelling.label_trails`): the first pick
    writes ``town`` (4·E), every later pick reads it (4·E a pick, as in `label_ruling_set_bytes`);
    every pick writes 8 B a splitter; every edge is claimed once: its dart's successor read and its owner swapped
    in (8·E); each of the two walkers of a splitter reads the splitter and writes its word (12 B),
    and about one of them a further 4 B where it stops (the owner of the splitter it reached, or
    a claim that failed); each round's pointer jumping on its 2·s walkers runs at most
    ceil(log2 2s) rounds of 24 B a walker (the host's bound; a walkers' cycle has at most s) and
    unpacks them (12 B)."""
    splitters = list(stats.get("trail_splitters") or [])
    picks = _picks(int(stats.get("trail_rounds", len(splitters))), params)
    s_all = sum(splitters)
    jumps = sum(24 * 2 * s * ceil_log2(2 * s) + 12 * 2 * s for s in splitters)
    return picks * 4 * E + 8 * s_all + 8 * E + (2 * 12 + 4) * s_all + jumps


def orient_label_extra_bytes(E: int, stats: dict, params: dict, labelling) -> int:
    """... and its **labelling**, in place of the directed one. With ``TRAILS``, the trails walked
    once (`label_trails_bytes`) and ``orient_trails``: it reads each edge's owner, gathers its
    walker's and the twin's cycle labels and reads both ends (20·E), and writes the oriented ends,
    the direction and the edge's label (16·E). Without, the 2·E darts labelled the policy's way
    (their rounds and splitters, ``stats["dart_labelling"]``) and ``orient``: both darts' labels
    and both ends read (16·E), the same four arrays written (16·E). Then ``dart_pairs`` reads the
    sorted order (8·E), every other sorted key (8·E: a stride of two touches every sector) and one
    direction per slot (4·E), and writes the slot's vertex, its out- and in-edge (12·E); the
    successors' scatter reads the two orders and writes succ (12·E; a lower bound: each further
    slice reads them again). The orientation's pairing and labels come from these: the directed
    pairing and labelling do not run."""
    pairs = (8 + 8 + 4 + 12) * E + 12 * E
    if params.get("TRAILS") and labelling is label_ruling_set_bytes:  # the ruling set's trails (its policy's)
        return label_trails_bytes(E, stats, params) + (20 + 16) * E + pairs
    return labelling(2 * E, stats.get("dart_labelling") or {}, params) + (16 + 16) * E + pairs


def stage_bytes(E: int, V: int, stats: dict, params: dict, labelling, ranking, *, directed: bool = True,
                itemsize: int = 4) -> dict:
    """Bytes per stage (the keys of `gpulab.euler.host.STAGES`) of one run on E edges with vertex
    ids below V, from its counts (``stats``: splitters, links, cycles, rounds, as the plan records
    them) and parameters; ``labelling`` and ``ranking`` are the byte counts of the policy's steps
    (`LABELLING`, `RANKING`). A stage without a model is ``None``."""
    links, cycles = int(stats.get("links", 0)), int(stats.get("cycles", 0))
    out = {"validate": validate_bytes(E, itemsize), "pairing": pairing_bytes(E, V),
           "labelling": labelling(E, stats, params) if labelling else None,
           "circuit_graph": circuit_graph_bytes(E, links, cycles),
           "spanning_forest": spanning_forest_bytes(E, links, cycles, int(stats.get("forest_rounds", 1))),
           "splice": splice_bytes(E, cycles), "ranking": ranking(E, stats) if ranking else None}
    if not directed:
        out["pairing"] = orient_extra_bytes(E, V)
        if labelling:
            out["labelling"] = orient_label_extra_bytes(E, stats, params, labelling)
    assert set(out) == set(STAGES)
    return out


def vertices_of(graph: dict) -> int | None:
    """V (vertex ids are below it) of a benchmark record's graph: recorded, or the generator's."""
    if graph.get("max_vertex") is not None:
        return int(graph["max_vertex"]) + 1
    if graph.get("vertices"):
        return int(graph["vertices"])
    if graph.get("generator") == "shallow_graph":
        from gpulab.euler.generators import shallow_params

        return int(shallow_params(int(graph["edges"]), int(graph["walk"]), int(graph["degree"]), 0, "random")["V"])
    return None


def record_bytes(rec: dict) -> dict | None:
    """`stage_bytes` of a GPU benchmark record (``None`` for a CPU record, a de Bruijn graph, whose
    pairing is generated, or a record without its stage counts)."""
    from gpulab.euler.variants import REGISTRY

    graph = rec.get("graph") or {}
    if rec.get("backend") == "cpu" or not rec.get("stats") or graph.get("kind") == "debruijn":
        return None
    V = vertices_of(graph)
    if V is None:
        return None
    policy = REGISTRY.get(rec["variant"], rec["backend"]).policy
    lab = LABELLING.get(getattr(policy.labelling, "__name__", ""))
    rank = RANKING.get(getattr(policy.ranking, "__name__", ""))
    E = int(rec["size"]["E"])
    return stage_bytes(E, V, rec["stats"], rec.get("params") or {}, lab, rank,
                       directed=rec["size"].get("directed", True))


def bounds_ms(stage_bytes_: dict, copy_GBps: float) -> dict:
    """Each stage's bound: its bytes at the copy bandwidth (GB/s, read + write counted), in ms."""
    return {k: (None if b is None else b / (copy_GBps * 1e9) * 1e3) for k, b in stage_bytes_.items()}


def bound_rows(result: dict, copy_GBps: float, labels=None, defaults_only: bool = False) -> list[dict]:
    """The book's table: per stage of every modelled GPU record whose label is in ``labels``
    (default: the 42M graphs), the bytes, the bound, the measured time and the gap
    (measured / bound); with ``defaults_only``, only the backends' default variants."""
    from gpulab.euler.variants import REGISTRY

    rows = []
    for r in result["records"]:
        if defaults_only and (r["backend"] == "cpu" or r["variant"] != REGISTRY.default(r["backend"])):
            continue
        if labels is not None and r["label"] not in labels:
            continue
        if labels is None and "42M" not in r["label"]:
            continue
        if not r.get("stages_ms"):
            continue
        sb = record_bytes(r)
        if sb is None:
            continue
        bound = bounds_ms(sb, copy_GBps)
        for stage in STAGES:
            ms = r["stages_ms"].get(stage)
            if ms is None or sb[stage] is None:
                continue
            rows.append({"size": r["label"], "variant": r["variant"], "backend": r["backend"], "stage": stage,
                         "GB moved": sb[stage] / 1e9, "bound ms": bound[stage], "measured ms": ms,
                         "gap ×": ms / bound[stage] if bound[stage] else None})
    return rows


def copy_bandwidth_of(result: dict, bench_dir: Path) -> tuple[float, str]:
    """(copy bandwidth in GB/s, where it comes from) for a result: measured in its run
    (``extra.copy_bandwidth_GBps``), else the same device's measured copy bandwidth committed with
    chapter 4's model (``radix-model-<device>.json``), else the H200's datasheet peak."""
    bw = (result.get("extra") or {}).get("copy_bandwidth_GBps")
    if bw:
        return float(bw), "device-to-device copy measured in this run"
    dev = result["device"]["name"].lower().replace("nvidia", "").strip().replace(" ", "-")
    radix = Path(bench_dir) / f"radix-model-{dev}.json"
    if radix.exists():
        tb = json.loads(radix.read_text()).get("bandwidth TB/s")
        if tb:
            return float(tb) * 1e3, f"device-to-device copy measured on the {result['device']['name']} ({radix.name})"
    return DATASHEET_TBPS * 1e3, "datasheet bound: HBM3e peak, not measured"


def write_bounds(result_path, out_dir) -> Path:
    """Write ``euler-bounds-<device>.json`` (rows for the book's ``gpulab:rows`` marker) from a
    committed benchmark run."""
    result_path = Path(result_path)
    result = json.loads(result_path.read_text())
    bw, source = copy_bandwidth_of(result, result_path.parent)
    dev = result_path.stem.split("-", 1)[1]
    path = Path(out_dir) / f"euler-bounds-{dev}.json"
    path.write_text(json.dumps({"rows": bound_rows(result, bw, defaults_only=True), "copy bandwidth GB/s": bw, "bandwidth source": source,
                                "measured": result["date"], "device": result["device"]["name"],
                                "model": "gpulab.euler.model.stage_bytes"}, indent=1) + "\n")
    return path


if __name__ == "__main__":  # python -m gpulab.euler.model docs/benchmarks/euler-h200.json docs/benchmarks
    import sys

    src = sys.argv[1] if len(sys.argv) > 1 else "docs/benchmarks/euler-h200.json"
    out = write_bounds(src, sys.argv[2] if len(sys.argv) > 2 else Path(src).parent)
    data = json.loads(out.read_text())
    print(f"copy bandwidth {data['copy bandwidth GB/s']:.0f} GB/s ({data['bandwidth source']})")
    print(f"{'size':<22} {'backend':<7} {'stage':<16} {'GB moved':>9} {'bound ms':>9} {'measured ms':>11} {'gap x':>6}")
    for r in data["rows"]:
        print(f"{r['size']:<22} {r['backend']:<7} {r['stage']:<16} {r['GB moved']:>9.3f} {r['bound ms']:>9.3f} "
              f"{r['measured ms']:>11.3f} {r['gap ×']:>6.1f}")
    print(f"wrote {out}")
