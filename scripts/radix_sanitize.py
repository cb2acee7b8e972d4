"""Chapter 4's register-resident sorts (`local`, `onesweep`) under compute-sanitizer, both
backends: a thin wrapper of `scripts/sanitize.py` (which covers every variant of every chapter).

    for t in memcheck racecheck synccheck initcheck; do
        compute-sanitizer --tool $t --report-api-errors no --error-exitcode 9 python3 scripts/radix_sanitize.py; done

Variant names may be given (default: onesweep local).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sanitize  # noqa: E402


def main() -> int:
    from gpulab import device

    names = set(sys.argv[1:] or ["onesweep", "local"])
    bad = 0
    for backend in sanitize.BACKENDS:
        if backend == "cuda-c" and device.on_simulator():
            print(f"radix {backend}: skipped: needs a real GPU")
            continue
        bad += sanitize.run_workload(["radix"], backend, seed=3, variants=names)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
