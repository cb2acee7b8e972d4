"""The appendix's two tables from the committed Dask runs on two H100s (runs 5-8 in
docs/benchmarks/distributed-runs/, each a scripts/bench_distributed.py --only subset JSON):

  distributed-chunks-h100x2.json    per run: rank ranges per worker, the client's batching
                                    interval, two GPUs through Dask against one GPU without it
  distributed-timeline-h100x2.json  where the last timed call of C(200,6) on two GPUs spent its
                                    time (gpulab.distributed.call_timeline), per run

    python scripts/distributed_runs_table.py
"""
from __future__ import annotations

import json
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "docs" / "benchmarks"
RUNS = ["run5-h100x2", "run6-default-h100x2", "run6-batch1-h100x2", "run6-range1-h100x2", "run7-default-h100x2",
        "run7-range1-h100x2", "run8-range2-h100x2"]


def main() -> None:
    chunks, timeline = [], []
    for name in RUNS:
        d = json.loads((BENCH / "distributed-runs" / f"{name}.json").read_text())
        per = d["settings"].get("chunks_per_worker", "default_chunks")
        # runs 5-7 recorded the default as "default_chunks" (or nothing), which was 4 per worker
        # then; later runs record the number
        ranges = 4 if per in (None, "default_chunks") else int(per)
        batch = d["settings"].get("client_batch_ms", "Dask's (10)")
        rows = {r["case"]: r for r in d["rows"]}
        chunks.append({"run": name.split("-h100")[0], "ranges per worker": ranges,
                       "client batch ms": 10 if not isinstance(batch, (int, float)) else batch,
                       "C(200,6) ms": rows["C(200,6)"]["2_gpus_ms"], "C(200,6) x": rows["C(200,6)"]["2_vs_no_dask"],
                       "C(236,6) x": rows["C(236,6)"]["2_vs_no_dask"], "C(300,5) ms": rows["C(300,5)"]["2_gpus_ms"]})
        rec = [r for r in d["records"] if r.get("case") == "C(200,6)" and r.get("workers") == 2]
        if rec and "last_call_timeline_ms" in rec[0]:
            t = rec[0]["last_call_timeline_ms"]
            timeline.append({"run": name.split("-h100")[0], "ranges per worker": ranges,
                             "to first task": round(t["first_task_of_busiest"], 1), "searching": round(t["searching"], 1),
                             "between tasks": round(t["between_tasks"], 1),
                             "in task, not searching": round(t["in_task_besides_search"], 1),
                             "after last task": round(t["after_last_task"], 1), "call": round(t["call"], 1)})
    what = "derived by scripts/distributed_runs_table.py from docs/benchmarks/distributed-runs/" + ", ".join(RUNS)
    for stem, rows in (("distributed-chunks-h100x2", chunks), ("distributed-timeline-h100x2", timeline)):
        (BENCH / f"{stem}.json").write_text(json.dumps({"what": what, "device": "2 x NVIDIA H100 80GB HBM3",
                                                        "rows": rows}, indent=1) + "\n")
        print(stem, len(rows), "rows")


if __name__ == "__main__":
    main()
