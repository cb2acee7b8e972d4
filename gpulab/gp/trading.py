r"""The trading model (the paper's section 3), in exactly the arithmetic every backend uses.

Per individual and stock: $10,000 and no shares on the first evaluation day; a $1 commission
per trade. On day \(d\), with the buy tree's and the sell tree's values for that stock and
day, and the day's close \(c_d\) (a float32, converted exactly to float64):

* **buy ∧ ¬sell**, no shares held: buy the most shares the money allows after the fee,
  \(n = \lfloor (m - 1) / c_d \rfloor\); pay \(n c_d + 1\). If \(n = 0\) (the money is
  below one share's price plus the fee) the order is **not placed** and costs nothing: the
  rule tries again at its next buy signal.
* **sell ∧ ¬buy**, shares held: sell them all, receive \(n c_d - 1\).
* otherwise nothing (the paper's decision matrix).

After the last day a position still held is sold at that day's close (with the fee).

**Exact on every backend.** Money is float64, shares an integer below `SHARE_LIMIT` =
\(2^{29}\), close prices have 24-bit mantissas, so \(n \cdot c_d\) is exact in float64
(29 + 24 bits ≤ 53). That makes ``m - n*c`` give the same bits whether or not a compiler
contracts it into a fused multiply-add (nvcc and NVRTC may, the CPU does not), and the
division and the floor are correctly rounded IEEE operations everywhere. A buy that would hold
\(2^{29}\) shares or more sets an overflow flag, and the host raises
[`LimitError`][gpulab.errors.LimitError]. The quotient \((m-1)/c\) is rounded, so it can round up
to an integer the money does not quite reach; one exact check (\(n c > m - 1\) ⇒
\(n - 1\)) makes \(n\) the true floor.

[`trade_day`][gpulab.gp.trading.trade_day] is written once in Python and compiled twice: with ``numba.njit`` for the
CPU interpreters and with ``cuda.jit(device=True)`` for the numba kernels; ``kernels.cu`` has
the same lines in C.
"""

from __future__ import annotations

START_MONEY = 10_000.0
FEE = 1.0
SHARE_LIMIT = 2 ** 29  # shares * close (a float32) stays exact in float64 below this

# Action codes (also the trace bits 2 and 3 shifted down): what happened on a day.
NONE, BOUGHT, SOLD, OVERFLOW = 0, 1, 2, 4

# Trace byte per (individual, stock, day): the two signals and the action taken.
TRACE_BUY, TRACE_SELL, TRACE_BOUGHT, TRACE_SOLD = 1, 2, 4, 8


# --8<-- [start:trade_day]
def trade_day(buy, sell, close, money, shares):
    """One day of the decision matrix. ``close`` is the day's close as float64 (exactly the
    float32 price), ``shares`` an int64. Returns ``(money, shares, action)``."""
    if buy and not sell:
        if shares == 0:
            avail = money - 1.0  # the fee
            q = avail / close
            if q >= 536870912.0:  # 2**29 shares or more: the product n*close may not be exact
                return money, shares, 4
            if q >= 1.0:
                n = int(q)  # q >= 1: truncation is the floor
                if n * close > avail:  # the rounded quotient reached an integer the money does not
                    n -= 1
                if n >= 1:
                    return avail - n * close, n, 1
    elif sell and not buy:
        if shares > 0:
            return money + shares * close - 1.0, 0, 2
    return money, shares, 0
# --8<-- [end:trade_day]


def liquidate(money, shares, close):
    """Sell what is still held at the last close (with the fee)."""
    if shares > 0:
        return money + shares * close - 1.0
    return money
