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

import os
import sys

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
