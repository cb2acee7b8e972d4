"""Progress bars for long work: one helper over `tqdm`, so every command shows them the same way.

A bar goes to stderr (stdout stays clean for results and `--json`), shows the count, the rate
and the time left, and is drawn only when stderr is a terminal: in a pipe, a log or CI it
prints nothing. `GPULAB_PROGRESS=1` forces bars on, `GPULAB_PROGRESS=0` off.

```python
from gpulab.progress import bar

with bar(total=50, desc="generations", unit="gen") as pbar:
    for g in range(50):
        ...
        pbar.update()
```
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

from tqdm import tqdm


def enabled(disable: bool | None = None) -> bool | None:
    """tqdm's `disable`: True (no bar), False (a bar), or None (a bar only on a terminal)."""
    if disable is not None:
        return disable
    forced = os.environ.get("GPULAB_PROGRESS", "").strip().lower()
    if forced in ("1", "true", "yes", "on"):
        return False
    if forced in ("0", "false", "no", "off"):
        return True
    return None


def bar(total: int | None = None, desc: str = "", unit: str = "it", disable: bool | None = None,
        leave: bool = False, **kwargs) -> tqdm:
    """A progress bar on stderr; pass `disable=True` to silence it (e.g. under `--json`)."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=enabled(disable), leave=leave,
                dynamic_ncols=True, **kwargs)


def write(line: str) -> None:
    """Print one line on stderr without breaking a bar that is being drawn."""
    tqdm.write(line, file=sys.stderr)


class StopRequest:
    """What [`interruptible`][gpulab.progress.interruptible] yields: `requested` turns True at
    the first Ctrl-C; the work checks it at its safe points and stops there."""

    requested = False


@contextlib.contextmanager
def interruptible(step: str = "this step"):
    """Ctrl-C inside the block asks the work to stop at its next safe point instead of at once.

    A KeyboardInterrupt raised in the middle of compiled numba code (a parallel `njit` loop)
    surfaces as a `SystemError`, and it would cut a generation in half: so the first Ctrl-C only
    sets `requested` (and says so on stderr), the loop stops after `step`, and a second Ctrl-C
    interrupts at once. Outside the main thread (where Python delivers signals) it changes nothing.
    """
    stop = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame):
        if stop.requested:  # the second Ctrl-C: now
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        stop.requested = True
        write(f"gpulab: Ctrl-C: stopping after {step} (Ctrl-C again to stop now)")

    signal.signal(signal.SIGINT, handler)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def is_interrupt(exc: BaseException) -> bool:
    """A KeyboardInterrupt, or the `SystemError` numba raises when one arrives inside compiled code."""
    return isinstance(exc, KeyboardInterrupt) or (
        isinstance(exc, SystemError) and isinstance(exc.__context__, KeyboardInterrupt))
