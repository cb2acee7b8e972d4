"""Exercise euler.2 — list ranking by pointer jumping (Wyllie).

`nxt[i]` is the element after `i` in a single linked list of n elements (`nxt[last] = -1`).
Write `list_rank(nxt)`: `rank[i]` = the number of elements before `i` (the head has rank 0), with
Wyllie's algorithm: every element keeps `d[i]` (the distance to the end of the list) and a
pointer; each round, in parallel, `d[i] += d[nxt[i]]` and `nxt[i] = nxt[nxt[i]]` for elements
whose pointer is not -1. Double-buffer (read one pair of arrays, write the other): a round must
not see values written in the same round. Stop when a round changes nothing (a one-int flag
the kernel sets); then `rank[i] = n - d[i]`. How many rounds does a list of n elements need?
(The test checks your count: `list_rank` returns `(rank, rounds)`.)
"""

import numpy as np  # noqa: F401
from numba import cuda, int32, uint32  # noqa: F401


def list_rank(nxt, out=None):
    """``(rank, rounds)``: rank[i] = the number of elements before i in the list ``nxt``
    (int32, -1 after the last element); ``out`` (a device array) receives the ranks if given."""
    raise NotImplementedError("exercise euler.2: write the pointer-jumping kernels and the host loop")
