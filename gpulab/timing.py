"""Timing GPU work honestly: CUDA events after warm-up, the median of repeats.

On the simulator CUDA events return -1, so the wall clock is used there (and the numbers only
tell the CPU cost of simulating, never GPU speed).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

from gpulab import device


@dataclass
class Timing:
    """Samples of one measured region, in milliseconds."""

    samples_ms: list[float] = field(default_factory=list)
    clock: str = "cuda-event"

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_ms)

    @property
    def spread(self) -> float:
        """(max - min) / median: how much the repeats disagree."""
        m = self.median_ms
        return (max(self.samples_ms) - min(self.samples_ms)) / m if m > 0 else 0.0


def measure(run: Callable[[], object], *, warmup: int = 2, repeat: int = 10) -> Timing:
    """Time ``run`` (which enqueues GPU work on the default stream) ``repeat`` times.

    ``warmup`` calls come first so that compilation, module loading and first-touch costs
    stay out of the numbers.
    """
    from numba import cuda

    if device.on_simulator():
        return Timing(wall(run, warmup=warmup, repeat=repeat).samples_ms, clock="wall (simulator)")
    for _ in range(warmup):
        run()
    cuda.synchronize()
    start, stop = cuda.event(), cuda.event()
    samples = []
    for _ in range(repeat):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        samples.append(cuda.event_elapsed_time(start, stop))
    return Timing(samples, clock="cuda-event")


def measure_rounds(runs: list[Callable[[], object]], *, warmups: list[int], repeat: int,
                   rounds: int = 4) -> list[Timing]:
    """Time several calls of the same work ``repeat`` times each, as
    [`measure`][gpulab.timing.measure] does, in ``rounds`` turns: each call's warm-up first
    (``warmups``, one count per call), then per round a block of about ``repeat / rounds``
    samples of each call in turn. Drift of the host over a run (its clock, other processes)
    then falls on every call alike, so that their ratio (a benchmark's public call over its
    kernels) compares them at the same times, not in two blocks seconds apart."""
    if len(warmups) != len(runs):
        raise ValueError(f"one warm-up count per call: {len(runs)} calls, {len(warmups)} counts")
    rounds = max(1, min(rounds, repeat))
    for run, w in zip(runs, warmups):
        for _ in range(w):
            run()
    share = [repeat // rounds + (1 if r < repeat % rounds else 0) for r in range(rounds)]
    out = [Timing([], clock="cuda-event") for _ in runs]
    for k in share:
        for run, t in zip(runs, out):
            got = measure(run, warmup=0, repeat=k)
            t.samples_ms.extend(got.samples_ms)
            t.clock = got.clock
    return out


def wall(run: Callable[[], object], *, warmup: int = 1, repeat: int = 10,
         before: Callable[[], object] | None = None) -> Timing:
    """Time ``run`` by the host's wall clock, each call ended by a device synchronize: what a
    caller waits for, host work included (``measure`` times the GPU's queue instead).
    ``before()``, untimed, runs ahead of each timed call (e.g. emptying a cache)."""
    from numba import cuda

    for _ in range(warmup):
        run()
    cuda.synchronize()
    samples = []
    for _ in range(repeat):
        if before is not None:
            before()
        t0 = time.perf_counter()
        run()
        cuda.synchronize()
        samples.append((time.perf_counter() - t0) * 1e3)
    return Timing(samples, clock="wall")


def host_profile(call: Callable[[], object], calls: int, *, top: int = 25, after: Callable[[], object] | None = None
                 ) -> list[str]:
    """Where the host time of `calls` calls of `call` goes, by cProfile: a line with the time a
    call took under the profiler, then the `top` functions by time of their own and by time
    with their callees, in microseconds per call (`after()`, e.g. a device synchronize, runs
    once after the calls, inside the profile). For the scripts that time the public calls."""
    import cProfile
    import pstats
    from pathlib import Path

    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable()
    for _ in range(calls):
        call()
    if after is not None:
        after()
    pr.disable()
    lines = [f"{1e6 * (time.perf_counter() - t0) / calls:.1f} us a call under cProfile"]
    st = pstats.Stats(pr)
    for col, title in ((2, "own time"), (3, "with callees")):
        lines.append(f"-- top by {title} (us per call)")
        rows = sorted(st.stats.items(), key=lambda kv: kv[1][col], reverse=True)[:top]
        for (f, line, name), (cc, nc, tt, ct, _) in rows:
            lines.append(f"{1e6 * tt / calls:8.1f} {1e6 * ct / calls:8.1f} {nc / calls:6.1f}x  {Path(f).name}:{line} {name}")
    return lines


def host_us(fn: Callable[[], object], calls: int, blocks: int = 5) -> float:
    """The host time of one call of `fn`, in microseconds: the median over `blocks` blocks of
    `calls` calls each (no device synchronization: for the scripts that time the host steps of
    a public call one by one)."""
    meds = []
    for _ in range(blocks):
        t = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        meds.append((time.perf_counter_ns() - t) / calls / 1e3)
    return statistics.median(meds)
