"""Chapter 1's padding example: the `register` kernel traced with its shared tile of A padded
(PAD=4, the registry's value) and unpadded (PAD=0).

`GPULAB_DEVICE=sim python docs/examples/trace_padding.py` prints `docs/examples/trace_padding.txt`
(tests/test_trace_book.py checks that it still does).
"""

import linecache

import numpy as np

import gpulab  # noqa: F401  (selects the simulator when there is no GPU, before numba loads)
from numba import cuda

from gpulab import trace
from gpulab.matmul.variants import REGISTRY

# --8<-- [start:pad]
rng = np.random.default_rng(0)
M, K, N = 37, 29, 41  # chapter 1's simulator size
dA = cuda.to_device(rng.standard_normal((M, K), dtype=np.float32))
dB = cuda.to_device(rng.standard_normal((K, N), dtype=np.float32))
dC = cuda.device_array((M, N), np.float32)
register = REGISTRY.resolve("register", "numba")
for pad in (4, 0):
    with trace.recording() as rec:  # every launch inside the block is traced
        register.run(dA, dB, dC, None, register.launch_params({"PAD": pad}))()
    (report,) = rec.reports
    for (file, line, array), c in report.by_line.items():
        if c["shared_requests"]:  # the lines that touch shared memory
            code = linecache.getline(file, line).strip().split(" if ")[0]
            wavefronts = c["shared_wavefronts"] / c["shared_requests"]
            print(f"PAD={pad}  {code:<32} {wavefronts:g} wavefronts per request")
# --8<-- [end:pad]
