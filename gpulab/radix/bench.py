"""``gpulab bench radix``: every variant against CUB's radix sort alone.

Three kinds of case, all uint32 keys drawn fresh for the run:

* ``2^k``: keys-only sort of 2^k uniformly random 32-bit keys (all 32 bits significant,
  so the early exit saves nothing here); peer: CUB's ``DeviceRadixSort::SortKeys`` called
  directly (`gpulab.radix.peer`): input read in place, sorted keys written to a second
  buffer, temporary storage allocated outside the timed region — exactly our sorts' work.
  ``cupy.sort`` (which copies its input, then runs the same CUB sort) is recorded beside it in
  ``other_peers_ms``, not in the ratio.
* ``pairs 2^k``: keys with uint32 values (the positions 0..n-1, so the result is an argsort,
  made once outside the timed region) — the same work as the peer, CUB's ``SortPairs`` with
  those values (before 2026-11-22 ours also wrote the positions inside its timed region); the
  public call is ``sort_pairs`` on those keys and values (until 2026-11-28 it was ``argsort``,
  which also writes the positions and widens them to int64);
  ``cupy.argsort`` (int64 indices) is recorded in ``other_peers_ms``.
* ``distinct N``: the seed's comparison, CPU (``numpy.unique``) against the GPU pipeline
  (sort, flag run heads, scan, compact), on N keys uniform in [0, N/2) (about 43% distinct);
  peer ``cupy.unique`` (its sort, head flags and compaction, and an input copy). On the GPU the results are checked against ``cupy.unique``; the CPU
  baseline is timed up to 26M keys (``numpy.unique`` takes minutes at 262M on that machine).
* The CPU sorts are numpy's *stable* sort (what the GPU sorts compute), timed up to 2^24 keys.

The ceiling column is the memory-bandwidth bound of an ideal 4-pass (8-bit digit) LSD sort
that reads and writes every key once per pass (32 bytes per key) at the device-to-device copy
bandwidth measured on the H200 (4.24 TB/s, ``shared/device/README.md``). `bytes_per_key`
is the per-variant model the book compares with the measured times.

The public-call column times `gpulab.radix.sort` / `sort_pairs` / `distinct` on the keys as a
CuPy user holds them (`caller_arrays`; numba arrays where CuPy is missing), the JSON's
``public_call_inputs`` says which.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from gpulab import device
from gpulab.arrays import to_host
from gpulab.benchmark import BenchSpec, Case, caller_cupy, public_inputs_text
from gpulab.errors import GpulabError
from gpulab.radix.policy import RadixPolicy

COPY_BW = 4.24e12  # bytes/s, device-to-device copy (read + write) measured on the H200
IDEAL_BYTES_PER_KEY = 32.0  # 4 passes x (read 4 + write 4)

CPU_MAX_KEYS = 2**24  # the numpy baseline is timed on sorts up to here ...
CPU_MAX_DISTINCT = 30_000_000  # ... and on distinct up to here


def _case(kind: str, n: int, label: str) -> Case:
    gpu = not device.on_simulator()
    ceil = COPY_BW / IDEAL_BYTES_PER_KEY / 1e9 if (gpu and kind == "keys") else None
    return Case(label=label, size={"kind": kind, "n": n}, work=float(n), unit="Gkeys/s", unit_scale=1e9,
                ceiling=ceil, ceiling_name="bandwidth bound (4 passes x 8 B/key)" if ceil else "")


def cases(quick: bool) -> list[Case]:
    if device.on_simulator():
        return [_case("keys", 300, "300"), _case("pairs", 257, "pairs 257"), _case("distinct", 200, "distinct 200")]
    if quick:
        return [_case("keys", 2**20, "2^20"), _case("keys", 2**24, "2^24"), _case("pairs", 2**24, "pairs 2^24"),
                _case("distinct", 2_000_000, "distinct 2M")]
    return ([_case("keys", 2**k, f"2^{k}") for k in (20, 24, 26, 28)]
            + [_case("pairs", 2**k, f"pairs 2^{k}") for k in (24, 28)]
            + [_case("distinct", n, f"distinct {lab}") for n, lab in ((2_000_000, "2M"), (26_000_000, "26M"),
                                                                        (262_000_000, "262M"))])


def setup(case: Case, rng: np.random.Generator):
    from numba import cuda

    kind, n = case.size["kind"], case.size["n"]
    if kind == "distinct":
        keys = rng.integers(0, max(n // 2, 1), n, dtype=np.uint32)
    elif device.on_simulator():  # a dry run: 8-bit keys, so the early exit keeps passes few
        keys = rng.integers(0, 256, n, dtype=np.uint32)
    else:
        keys = rng.integers(0, 2**32, n, dtype=np.uint32)
    return {"kind": kind, "n": n, "keys": keys, "d_keys": cuda.to_device(keys), "plans": {}, "ref": None,
            "sim": device.on_simulator()}


def _plan(variant, state):
    key = variant.key
    if key not in state["plans"]:
        params = variant.launch_params()  # on the simulator its sim_params: small blocks
        plan = variant.run(state["n"], state["kind"] == "pairs", params)
        from gpulab.radix import host

        state["plans"][key] = host.distinct_plan(plan) if state["kind"] == "distinct" else plan
    return state["plans"][key]


def runner(variant, state):
    if variant.backend == "cpu" and state["kind"] != "distinct" and state["n"] > CPU_MAX_KEYS:
        raise GpulabError(f"the numpy baseline is timed only up to {CPU_MAX_KEYS} keys and in the distinct cases "
                          "(the seed's comparison); beyond, one stable CPU sort takes many seconds")
    if variant.backend == "cpu" and state["kind"] == "distinct" and state["n"] > CPU_MAX_DISTINCT:
        raise GpulabError(f"the numpy baseline is not timed above {CPU_MAX_DISTINCT} keys: one numpy.unique takes "
                          "minutes on the GPU machine's CPU at this size (see the 26M row), and the harness runs it 5 times")
    plan = _plan(variant, state)
    d = state["d_keys"]
    if state["kind"] == "distinct":
        return lambda: plan.run(d)
    if state["kind"] == "pairs":  # given values, as CUB's SortPairs gets them
        pos = _positions(state)
        return lambda: plan.sort(d, pos)
    return lambda: plan.sort(d)


def _positions(state):
    """The pairs case's values: the positions 0..n-1 on the device, made once per case."""
    if "d_positions" not in state:
        from numba import cuda

        state["d_positions"] = cuda.to_device(np.arange(state["n"], dtype=np.uint32))
    return state["d_positions"]


def _reference(state):
    if state["ref"] is None:
        keys = state["keys"]
        if state["kind"] == "distinct" and _xp(state) is not np:
            state["ref"] = _xp(state).unique(_xp(state).asarray(keys)).get()  # CUB: numpy.unique takes minutes here
        else:
            state["ref"] = np.unique(keys) if state["kind"] == "distinct" else np.sort(keys)
    return state["ref"]


def check_argsort(keys, perm, sorted_ref, xp=np) -> tuple[bool, str]:
    """A complete check of a stable argsort without a reference argsort: ``perm`` is a
    permutation, ``keys[perm]`` is the sorted keys, and equal keys keep increasing positions.
    ``xp`` is numpy, or cupy to check millions of keys on the GPU."""
    n = keys.size
    perm = xp.asarray(perm).astype(xp.int64)
    keys, sorted_ref = xp.asarray(keys), xp.asarray(sorted_ref)
    if perm.shape != (n,):
        return False, f"argsort has shape {perm.shape}, expected ({n},)"
    if n and (int(perm.min()) < 0 or int(perm.max()) >= n or int(xp.bincount(perm, minlength=n).max()) != 1):
        return False, "argsort is not a permutation of 0..n-1"
    ks = keys[perm]
    if not bool(xp.array_equal(ks, sorted_ref)):
        bad = int(xp.argmax(ks != sorted_ref))
        return False, f"keys[argsort] differs from the sorted keys first at {bad}"
    same = ks[1:] == ks[:-1]
    if bool(xp.any(perm[1:][same] < perm[:-1][same])):
        return False, "equal keys are out of input order: the sort is not stable"
    return True, "stable argsort"


def _xp(state):
    if state["sim"]:
        return np
    try:
        import cupy

        return cupy
    except ImportError:
        return np


def check(variant, state):
    from numba import cuda

    launch = runner(variant, state)
    plan = state["plans"][variant.key]
    # Poison the work buffers: a pass that forgets a key leaves the sentinel behind.
    for arr in getattr(plan, "keys", []) + getattr(getattr(plan, "sp", None), "keys", []):
        arr[:] = np.uint32(0xDEADBEEF)
    out = launch()
    cuda.synchronize()
    ref = _reference(state)
    if state["kind"] == "distinct":
        arr, count = out
        got = to_host(arr[:count])  # the buffer past the count is unspecified: not copied (initcheck)
        ok = np.array_equal(got, ref)
        return ok, f"{count} distinct keys ({ref.size} expected)" if not ok else "equals numpy.unique"
    keys_out, vals_out = out
    got = to_host(keys_out)
    if state["kind"] == "pairs":
        if not np.array_equal(got, ref):
            return False, "sorted keys differ from numpy.sort"
        xp = _xp(state)
        perm = vals_out if xp is np else xp.asarray(vals_out)  # cupy reads numba arrays in place
        return check_argsort(state["keys"], to_host(perm) if xp is np else perm, ref, xp)
    ok = np.array_equal(got, ref)
    return ok, "equals numpy.sort" if ok else f"differs from numpy.sort first at {int(np.argmax(got != ref))}"


# --8<-- [start:peer]
def peer(state):
    """CUB's sort alone for keys and pairs (checked once against numpy before it is timed);
    ``cupy.unique`` for distinct."""
    from gpulab.radix import peer as cub

    if state["kind"] == "distinct":
        try:
            import cupy as cp
        except ImportError:
            return None
        c = cp.asarray(state["keys"])
        return (lambda: cp.unique(c)), "CUB via cupy.unique (input copy, sort, unique)"
    if cub.unavailable_reason():
        return None
    pairs = state["kind"] == "pairs"
    launch, keys_out, vals_out = cub.sorter(state["d_keys"], pairs=pairs)
    launch()
    if not np.array_equal(to_host(keys_out), _reference(state)):
        raise RuntimeError("the CUB peer's output differs from numpy.sort: not timing a wrong peer")
    if pairs and not check_argsort(state["keys"], to_host(vals_out), _reference(state))[0]:
        raise RuntimeError("the CUB peer's values are not a stable argsort: not timing a wrong peer")
    return launch, cub.NAME_PAIRS if pairs else cub.NAME_KEYS


def other_peers(state):
    """What a CuPy user calls, recorded beside the peer: it copies the input before sorting."""
    if state["kind"] == "distinct":
        return None
    try:
        import cupy as cp
    except ImportError:
        return None
    c = cp.asarray(state["keys"])
    if state["kind"] == "pairs":
        return {"cupy.argsort (input copy + CUB SortPairs, int64 indices)": lambda: cp.argsort(c)}
    return {"cupy.sort (input copy + CUB SortKeys)": lambda: cp.sort(c)}
# --8<-- [end:peer]


def teardown(state):
    state["plans"].clear()


SPEC = BenchSpec(chapter="radix", cases=cases, setup=setup, runner=runner, check=check,
                 peer_name="CUB", peer=peer, other_peers=other_peers, teardown=teardown,
                 extra={"cub_version": lambda: _cub_version(),
                        "public_call_inputs": lambda: public_inputs_text("keys and values")})


def _cub_version():
    from gpulab.radix import peer as cub

    return None if cub.unavailable_reason() else cub.version()


# ----------------------------------------------------------------------------- the bytes-moved model


# --8<-- [start:model]
def bytes_per_key(policy: RadixPolicy, params: dict, pairs: bool = False) -> tuple[float, float]:
    """(bytes per key once per sort, bytes per key per pass) that a variant with this launch
    policy moves through DRAM.

    Once per sort: the max reduction (read 4); an argsort writes the initial positions (4).
    The first pass reads the input in place, so there is no copy. Per pass, with R = 2**BITS
    digits and TILE keys a block, the policy's `pass_bytes + 4·value_words + count_bytes·R / TILE`:

    * global split (split1_global): flags (read key 4, write flag 4), multi-block scan of the
      flags (read 4, write 4, then add-back read 4 + write 4), scatter (read key, flag,
      position: 12; write 4).
    * tile split (split1_shared / radix4_shared): tile sort (read 4, write 4), digit counts and
      starts (2·4·R per BLOCK keys), their scan (16 bytes per count), scatter (read 4, write 4,
      read counts and starts again).
    * reduce-then-scan (local / local4): upsweep (read 4, write counts), scan of the counts,
      downsweep (read 4, read counts, write 4): 12 + 24·R / TILE.
    * one-sweep (onesweep): once more, the histogram of every pass in one read of the keys (4).
      Per pass one kernel: read 4, write 4, and per tile R status words written twice
      (aggregate, prefix), read at least once by the look-back, zeroed in the next table, plus
      R digit offsets read: 8 + 20·R / TILE.
    Values add 4 bytes per key to every read and write of a key.
    """
    if not policy.pass_bytes:  # the CPU baseline: no model
        return 0.0, 0.0
    R = 2 ** params.get("BITS", 1)
    v = 4.0 if pairs else 0.0
    once = 4.0 + v  # max reduction (one-sweep: the histogram read replaces it); positions of an argsort
    per = policy.pass_bytes + policy.value_words * v
    if policy.count_bytes:
        per += policy.count_bytes * R / policy.tile_keys(params)
    return once, per


def passes(policy: RadixPolicy, params: dict, max_key: int = 2**32 - 1) -> int:
    bits = policy.digit_bits or params.get("BITS", 32)
    return -(-int(max_key).bit_length() // bits)


def passes_for(policy: RadixPolicy, params: dict, keys: np.ndarray) -> int:
    """Passes a sort of `keys` runs: up to the largest key's top digit; a policy that decides
    from its histograms (one-sweep) the first, queued before the histograms reach the host, and
    every later one whose digit differs between keys."""
    if not policy.histograms_first:
        return passes(policy, params, int(keys.max()))
    if keys.size < 2:  # nothing to sort: no pass runs
        return 0
    bits = params["BITS"]
    digits = [(keys >> np.uint32(s)) & np.uint32((1 << bits) - 1) for s in range(bits, 32, bits)]
    return 1 + sum(int(d.min() != d.max()) for d in digits)


def model_ms(policy: RadixPolicy, params: dict, n: int, pairs: bool = False, bw: float = COPY_BW) -> float | None:
    once, per = bytes_per_key(policy, params, pairs)
    if not per:
        return None
    return n * (once + passes(policy, params) * per) / bw * 1e3
# --8<-- [end:model]


def model_rows(result: dict) -> list[dict]:
    """Measured time against the bytes-moved model for every GPU record of a keys/pairs case."""
    from gpulab.radix import host
    from gpulab.radix.variants import REGISTRY

    rows = []
    for r in result["records"]:
        kind = r["size"]["kind"]
        if r["backend"] == "cpu" or kind == "distinct" or r["median_ms"] is None:
            continue
        v = REGISTRY.get(r["variant"], r["backend"])
        n = r["size"]["n"]
        shape = host.tile_shape(v.params, kind == "pairs")  # a key-value sort's own tile
        once, per = bytes_per_key(v.policy, shape, kind == "pairs")
        p = passes(v.policy, shape)
        m = model_ms(v.policy, shape, n, kind == "pairs")
        rows.append({"label": r["label"], "variant": r["variant"], "backend": r["backend"], "passes": p,
                     "bytes_per_key": once + p * per, "model_ms": m, "measured_ms": r["median_ms"],
                     "model_over_measured": m / r["median_ms"],
                     "achieved_TBps": n * (once + p * per) / (r["median_ms"] * 1e-3) / 1e12})
    return rows


def write_model(result_path: str | Path, out_dir: str | Path) -> Path:
    """Write ``radix-model-<device>.json`` (rows for the book's ``gpulab:rows`` marker) next to the JSON."""
    result = json.loads(Path(result_path).read_text())
    dev = Path(result_path).stem.split("-", 1)[1]
    rows = [{"size": r["label"], "variant": r["variant"], "backend": r["backend"], "passes": r["passes"],
             "model B/key": round(r["bytes_per_key"], 1), "model ms": r["model_ms"], "measured ms": r["measured_ms"],
             "model/measured": r["model_over_measured"], "effective TB/s": r["achieved_TBps"]} for r in model_rows(result)]
    path = Path(out_dir) / f"radix-model-{dev}.json"
    path.write_text(json.dumps({"rows": rows, "bandwidth TB/s": COPY_BW / 1e12, "measured": result["date"],
                                "model": "gpulab.radix.bench.bytes_per_key"}, indent=1) + "\n")
    return path


# ----------------------------------------------------------------------------- the public call


def caller_arrays(state):
    """The case's device inputs (keys; the positions for pairs, else None) as a user of the GPU
    holds them: CuPy arrays where CuPy runs (`gpulab.benchmark.caller_cupy`; views of the run's
    numba arrays, no copy), else the numba arrays themselves. A CuPy caller's result comes from CuPy's memory pool, as it
    does in that user's program; a numba caller's is a new allocation, unless it passes `out=`."""
    keys = state["d_keys"]
    vals = _positions(state) if state["kind"] == "pairs" else None
    cp = caller_cupy()
    if cp is None:
        return keys, vals
    return cp.asarray(keys), (None if vals is None else cp.asarray(vals))


def public(variant, state):
    """The public function on the case's keys already on the device, as a CuPy user calls it
    (`caller_arrays`): `sort` for keys, `sort_pairs` for pairs (the same work as CUB's
    SortPairs: given values moved with the keys), `distinct`. It names the variant and backend
    and no parameters, as a user writes it: it builds the kernels of the plan whose time the
    runner measured (`_plan`: the variant's own parameters)."""
    import gpulab.radix as rx

    keys, vals = caller_arrays(state)
    if state["kind"] == "pairs":
        return lambda: rx.sort_pairs(keys, vals, variant.name, variant.backend)
    fn = {"keys": rx.sort, "distinct": rx.distinct}[state["kind"]]
    return lambda: fn(keys, variant.name, variant.backend)


SPEC.public = public
