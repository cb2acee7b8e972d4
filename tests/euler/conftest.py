"""Chapter 5 test settings.

On the simulator, warp intrinsics (gpulab.simwarp) and barriers are Python thread rendezvous;
with CPython's default 5 ms thread switch interval each one waits for the GIL far longer than it
works. A 1 ms interval halves the chapter's simulated test time; it changes nothing else.
"""

import sys

from tests.conftest import ON_SIMULATOR

if ON_SIMULATOR:
    sys.setswitchinterval(0.001)
