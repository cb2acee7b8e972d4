"""``gpulab tour``: run every variant of every finished chapter once, check it, print a table.

On a GPU the sizes are large enough to be worth timing; on the simulator they are tiny (the
times then measure the simulator, not a GPU, and the table says so).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Callable

from gpulab import device
from gpulab import chapters as book


@dataclass
class TourCase:
    variant: object
    label: str
    setup: Callable[[], object]
    check: Callable[[object, object], tuple[bool, str]]
    runner: Callable[[object, object], Callable[[], object]]
    work: float = 0.0
    unit: str = ""
    unit_scale: float = 1.0


def run_case(case: TourCase) -> dict:
    from gpulab.errors import GpulabError
    from gpulab.timing import measure

    v = case.variant
    row = {"chapter": None, "variant": v.name, "backend": v.backend, "size": case.label,
           "ms": None, "throughput": None, "check": None, "detail": ""}
    reason = v.unavailable_reason()
    if reason:
        row["detail"] = f"skipped: {reason}"
        return row
    try:
        state = case.setup()
        ok, detail = case.check(v, state)
        row["check"], row["detail"] = bool(ok), str(detail)
        if ok:
            launch = case.runner(v, state)
            if device.on_simulator() or v.backend == "cpu":
                t0 = time.perf_counter()
                launch()
                from numba import cuda

                cuda.synchronize()
                row["ms"] = (time.perf_counter() - t0) * 1e3
            else:
                row["ms"] = measure(launch, warmup=1, repeat=5).median_ms
            if case.work and row["ms"]:
                row["throughput"] = f"{case.work / (row['ms'] * 1e-3) / case.unit_scale:.3g} {case.unit}"
    except GpulabError as exc:
        row["detail"] = f"skipped: {exc}"
    return row


def tour(chapters: list[str] | None = None, out=sys.stdout, as_json: bool = False,
         variants: list[str] | None = None) -> int:
    """Run the tour; return the number of variants whose check failed (the exit status).

    `variants`: only the variants of these names (in every backend).
    `as_json`: one JSON object on `out` (the device, every variant's row, a summary) and
    nothing else there; the line per variant goes to stderr."""
    info = device.info()
    sim = device.on_simulator()
    heading = f"gpulab tour on {info.name} ({'simulator: times are CPU times of the simulation' if sim else 'GPU'})"
    if as_json:
        from gpulab import progress

        say = progress.write
    else:
        def say(line):
            print(line, file=out, flush=True)
    say(heading)
    rows = []
    for ch in chapters or book.CHAPTERS:
        for case in book.get(ch).tour_cases(sim):
            if variants and case.variant.name not in variants:
                continue
            row = run_case(case)
            row["chapter"] = ch
            rows.append(row)
            mark = {True: "✓", False: "✗", None: "-"}[row["check"]]
            say(f"  {ch:8s} {row['variant']:20s} {row['backend']:7s} {mark}")
    failed = sum(1 for r in rows if r["check"] is False)
    ran = sum(1 for r in rows if r["check"] is not None)
    if as_json:
        import json

        print(json.dumps({"device": info.name, "mode": info.mode, "results": rows,
                          "summary": {"passed": ran - failed, "failed": failed, "skipped": len(rows) - ran}},
                         default=str),
              file=out)
        return failed
    header = ["chapter", "variant", "backend", "size", "time ms", "throughput", "check", "note"]
    table = [header] + [[r["chapter"], r["variant"], r["backend"], r["size"],
                         "—" if r["ms"] is None else f"{r['ms']:.3g}", r["throughput"] or "—",
                         {True: "✓", False: "✗", None: "skipped"}[r["check"]],
                         r["detail"] if r["check"] is not True else ""] for r in rows]
    widths = [max(len(str(t[i])) for t in table) for i in range(len(header) - 1)]
    print(file=out)
    for i, t in enumerate(table):
        print("  ".join(str(c).ljust(w) for c, w in zip(t, widths)) + "  " + t[-1], file=out)
        if i == 0:
            print("  ".join("-" * w for w in widths) + "  ----", file=out)
    skipped = len(rows) - ran
    print(f"\n{ran - failed} passed, {failed} failed, {skipped} skipped (reasons above)", file=out)
    return failed
