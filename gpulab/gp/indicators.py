r"""Technical indicators from daily OHLCV, computed once per market on the host, in float64.

Every function takes arrays of shape ``[S, T]`` (stocks × days, oldest day first) and returns
``[S, T]`` float64 with NaN where the indicator is not defined yet (its *lookback*). Seeding
follows TA-Lib's defaults where TA-Lib has the indicator, so the tests compare against it:

* **SMA(n)**: mean of the last ``n`` values; first defined at index ``n - 1``.
* **EMA(n)**: \(k = 2/(n+1)\), seeded with the SMA of the first ``n`` values at index
  ``n - 1``, then \(e_t = (x_t - e_{t-1})\,k + e_{t-1}\) (TA-Lib's form, to the last bit).
* **MACD(12, 26, 9)**: EMA12 − EMA26 of the close (each seeded as above), signal = EMA9 of
  the MACD line from its first value. TA-Lib seeds its MACD's EMAs differently (both start at
  the slow EMA's first day), so the two agree only once the seed has decayed: the tests compare
  from day 300 on, where the seed's weight \((1-k)^{t}\) is below 1e-10.
* **MFI(14)**: typical price × volume is positive flow on a day the typical price rises,
  negative when it falls; MFI = 100 · pos / (pos + neg) over the last 14 days (50 when both are 0).
* **CCI(20)**: (TP − SMA20(TP)) / (0.015 · mean absolute deviation); 0 when the deviation is 0.
* **EOM(14)** (Arms' ease of movement, not in TA-Lib): midpoint move × (high − low) / volume
  (× 10⁴, a scale that does not change the sign), averaged over 14 days; 0 on zero volume.
* **NVI / PVI** (not in TA-Lib): start at 1000; on a day the volume falls (NVI) or rises (PVI)
  the index moves by the close's percentage change, otherwise it stays. The paper's reading
  "above zero" is always true for a positive index, so we use the standard one (Fosback):
  the index above or below its own 255-day EMA.

The longest lookback is that 255-day EMA (first defined at index 254), so a market carries
`WARMUP` = 255 days of history before its first evaluation day.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from gpulab.gp import opcodes as oc

WARMUP = 255  # days of history before the first evaluation day (the 255-day EMA of NVI/PVI)
NVI_EMA = 255
MA_PERIODS = (1, 5, 10, 15, 25, 50, 75, 100, 150, 200)
EMA_PERIODS = (5, 9, 15, 20, 25)


def sma(x: np.ndarray, n: int) -> np.ndarray:
    """Simple moving average over the last ``n`` values (NaN for the first ``n - 1``)."""
    x = np.asarray(x, np.float64)
    out = np.full(x.shape, np.nan)
    if x.shape[-1] >= n:
        win = np.lib.stride_tricks.sliding_window_view(x, n, axis=-1)
        out[..., n - 1:] = win.sum(axis=-1) / n
    return out


@njit(cache=True)
def _ema_rows(x, n, out):
    k = 2.0 / (n + 1)
    S, T = x.shape
    for s in range(S):
        first = 0
        while first < T and np.isnan(x[s, first]):  # start where the input is defined
            first += 1
        if first + n > T:
            continue
        acc = 0.0
        for t in range(first, first + n):
            acc += x[s, t]
        e = acc / n
        out[s, first + n - 1] = e
        for t in range(first + n, T):
            e = (x[s, t] - e) * k + e
            out[s, t] = e


def ema(x: np.ndarray, n: int) -> np.ndarray:
    """EMA seeded with the SMA of the first ``n`` defined values (TA-Lib's default)."""
    x = np.atleast_2d(np.asarray(x, np.float64))
    out = np.full(x.shape, np.nan)
    _ema_rows(np.ascontiguousarray(x), n, out)
    return out


def typical_price(high, low, close) -> np.ndarray:
    """(high + low + close) / 3, added in that order (as TA-Lib's TYPPRICE)."""
    return (np.asarray(high, np.float64) + low + close) / 3.0


def macd(close, fast: int = 12, slow: int = 26, signal: int = 9) -> tuple[np.ndarray, np.ndarray]:
    """(MACD line, signal line)."""
    line = ema(close, fast) - ema(close, slow)
    return line, ema(line, signal)


def mfi(high, low, close, volume, n: int = 14) -> np.ndarray:
    """Money flow index over ``n`` days (first defined at index ``n``)."""
    tp = typical_price(high, low, close)
    flow = tp * volume
    up = np.zeros_like(tp)
    down = np.zeros_like(tp)
    up[:, 1:] = np.where(tp[:, 1:] > tp[:, :-1], flow[:, 1:], 0.0)
    down[:, 1:] = np.where(tp[:, 1:] < tp[:, :-1], flow[:, 1:], 0.0)
    pos = sma(up, n) * n
    neg = sma(down, n) * n
    total = pos + neg
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(total > 0, 100.0 * pos / np.where(total > 0, total, 1.0), 50.0)
    out[:, :n] = np.nan
    return out


def cci(high, low, close, n: int = 20) -> np.ndarray:
    """Commodity channel index over ``n`` days (first defined at index ``n - 1``)."""
    tp = typical_price(high, low, close)
    avg = sma(tp, n)
    out = np.full(tp.shape, np.nan)
    if tp.shape[-1] >= n:
        win = np.lib.stride_tricks.sliding_window_view(tp, n, axis=-1)
        dev = np.abs(win - avg[:, n - 1:, None]).sum(axis=-1) / n
        num = tp[:, n - 1:] - avg[:, n - 1:]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, n - 1:] = np.where(dev != 0, num / (0.015 * np.where(dev != 0, dev, 1.0)), 0.0)
    return out


def eom(high, low, volume, n: int = 14, scale: float = 1e4) -> np.ndarray:
    """Ease of movement, averaged over ``n`` days (first defined at index ``n``)."""
    high = np.asarray(high, np.float64)
    mid = (high + low) / 2.0
    emv = np.full(high.shape, np.nan)
    move = mid[:, 1:] - mid[:, :-1]
    vol = np.asarray(volume, np.float64)[:, 1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        emv[:, 1:] = np.where(vol > 0, scale * move * (high[:, 1:] - low[:, 1:]) / np.where(vol > 0, vol, 1.0), 0.0)
    out = np.full(high.shape, np.nan)
    out[:, 1:] = sma(emv[:, 1:], n)
    return out


@njit(cache=True)
def _volume_index(close, volume, negative, out):
    S, T = close.shape
    for s in range(S):
        v = 1000.0
        out[s, 0] = v
        for t in range(1, T):
            moved = volume[s, t] < volume[s, t - 1] if negative else volume[s, t] > volume[s, t - 1]
            if moved:
                v = v + v * (close[s, t] - close[s, t - 1]) / close[s, t - 1]
            out[s, t] = v


def nvi(close, volume) -> np.ndarray:
    """Negative volume index (starts at 1000; moves only on days the volume falls)."""
    out = np.empty(np.shape(close))
    _volume_index(np.ascontiguousarray(close, dtype=np.float64), np.ascontiguousarray(volume, dtype=np.float64), True, out)
    return out


def pvi(close, volume) -> np.ndarray:
    """Positive volume index (starts at 1000; moves only on days the volume rises)."""
    out = np.empty(np.shape(close))
    _volume_index(np.ascontiguousarray(close, dtype=np.float64), np.ascontiguousarray(volume, dtype=np.float64), False, out)
    return out


# --8<-- [start:terminals]
def terminals(open_, high, low, close, volume) -> tuple[np.ndarray, np.ndarray]:
    """All 31 terminals over the whole history: float64 ``[S, 17, T]`` and bool ``[S, 14, T]``
    (the order of `gpulab.gp.opcodes.FLOAT_TERMINALS` / ``BOOL_TERMINALS``)."""
    S, T = close.shape
    f = np.empty((S, oc.NF, T))
    for k, n in enumerate(MA_PERIODS):
        f[:, k] = sma(close, n)
    for k, n in enumerate(EMA_PERIODS):
        f[:, len(MA_PERIODS) + k] = ema(close, n)
    f[:, oc.OP_CP] = close
    f[:, oc.OP_CP + 1] = typical_price(high, low, close)
    nv, pv = nvi(close, volume), pvi(close, volume)
    nv_avg, pv_avg = ema(nv, NVI_EMA), ema(pv, NVI_EMA)
    line, sig = macd(close)
    m = mfi(high, low, close, volume)
    e = eom(high, low, volume)
    c = cci(high, low, close)
    readings = (nv > nv_avg, nv < nv_avg, pv > pv_avg, pv < pv_avg, line > 0, line < 0, line > sig, line < sig,
                m > 80, m < 20, e > 0, e < 0, c > 100, c < -100)
    b = np.stack(readings, axis=1)
    defined = np.isfinite(f).all(axis=1) & np.isfinite(np.stack([nv_avg, pv_avg, sig, m, e, c], axis=1)).all(axis=1)
    return f, b & defined[:, None, :]
# --8<-- [end:terminals]


def first_defined(open_, high, low, close, volume) -> int:
    """The first day index on which every indicator of every stock is defined."""
    S, T = close.shape
    f, _ = terminals(open_, high, low, close, volume)
    parts = [np.isfinite(f).all(axis=1), np.isfinite(ema(nvi(close, volume), NVI_EMA)),
             np.isfinite(macd(close)[1])]
    ok = np.logical_and.reduce([p.all(axis=0) for p in parts])
    return int(np.argmax(ok)) if ok.any() else T
