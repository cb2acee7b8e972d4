"""Nsight Compute's ``--csv`` output of one process, as the kernel-split scripts read it
(`radix_kernel_split.py`, `euler_kernel_split.py`): one row per kernel launch with its metrics,
and the ``@@ check ...`` line the profiled process printed."""

from __future__ import annotations

import csv
from pathlib import Path


def read(path: str) -> tuple[dict[int, dict], str | None]:
    """({launch ID: {"name": kernel name, metric name: value}}, the check's last word or None)."""
    rows, header, check = {}, None, None
    for line in Path(path).read_text().splitlines():
        if line.startswith("@@ check"):
            check = line.split()[-1]
        elif line.startswith('"ID"'):
            header = next(csv.reader([line]))
        elif header is not None and line.startswith('"'):
            rec = dict(zip(header, next(csv.reader([line]))))
            r = rows.setdefault(int(rec["ID"]), {"name": rec["Kernel Name"]})
            r[rec["Metric Name"]] = float(rec["Metric Value"].replace(",", ""))
    return rows, check
