"""Chapter 3 data: indicators against TA-Lib and hand-computed examples, the warm-up, the
synthetic generator, the CSV loader's errors, and the real-data sample."""

import importlib.util
import math

import numpy as np
import pytest

import gpulab.gp as gp
from gpulab.errors import LimitError, ShapeError
from gpulab.gp import indicators as ind
from gpulab.gp import opcodes as oc
from gpulab.gp.market import NMASK, WARMUP, DataError

try:
    import talib
except ImportError:  # a test dependency (the "test" extra); only the comparisons with it are skipped
    talib = None
needs_talib = pytest.mark.skipif(talib is None, reason="TA-Lib (the ta-lib package, a test dependency) is not installed")
HAS_SAMPLE = importlib.util.find_spec("bokeh_sampledata") is not None


def ohlcv(rng, T=1200):
    c = 100 * np.exp(np.cumsum(rng.normal(0, 0.02, T)))
    h = c * (1 + np.abs(rng.normal(0, 0.01, T)))
    lo = c * (1 - np.abs(rng.normal(0, 0.01, T)))
    v = rng.integers(10**5, 10**6, T).astype(float)
    return c, h, lo, v


def close_to(ours, theirs, start=0, rtol=1e-10, atol=1e-9):
    ours, theirs = np.asarray(ours)[start:], np.asarray(theirs)[start:]
    assert np.array_equal(np.isfinite(ours), np.isfinite(theirs)), "defined on different days"
    m = np.isfinite(theirs)
    np.testing.assert_allclose(ours[m], theirs[m], rtol=rtol, atol=atol)


@needs_talib
@pytest.mark.parametrize("n", ind.MA_PERIODS)
def test_sma_matches_talib(rng, n):
    c, *_ = ohlcv(rng)
    close_to(ind.sma(c[None], n)[0], talib.SMA(c, n))


@needs_talib
@pytest.mark.parametrize("n", ind.EMA_PERIODS + (12, 26, 255))
def test_ema_matches_talib_including_its_sma_seed(rng, n):
    c, *_ = ohlcv(rng)
    close_to(ind.ema(c[None], n)[0], talib.EMA(c, n), rtol=1e-13, atol=0)


@needs_talib
def test_macd_and_signal_match_talib_once_the_seed_has_decayed(rng):
    """TA-Lib starts its MACD's fast EMA at the slow EMA's first day; ours seeds each EMA at its
    own first day. The seed's weight decays as (1 - 2/(n+1))^t: from day 300 it is below 1e-10."""
    c, *_ = ohlcv(rng)
    line, sig = ind.macd(c[None])
    t_line, t_sig, _ = talib.MACD(c, 12, 26, 9)
    close_to(line[0], t_line, start=300, rtol=1e-8, atol=1e-9)
    close_to(sig[0], t_sig, start=300, rtol=1e-8, atol=1e-9)
    assert np.isnan(line[0, 24]) and np.isfinite(line[0, 25]) and np.isfinite(sig[0, 33]) and np.isnan(sig[0, 32])


@needs_talib
def test_mfi_cci_typical_price_match_talib(rng):
    c, h, lo, v = ohlcv(rng)
    close_to(ind.mfi(h[None], lo[None], c[None], v[None])[0], talib.MFI(h, lo, c, v, 14))
    close_to(ind.cci(h[None], lo[None], c[None])[0], talib.CCI(h, lo, c, 20), rtol=1e-9, atol=1e-8)
    close_to(ind.typical_price(h[None], lo[None], c[None])[0], talib.TYPPRICE(h, lo, c), rtol=0, atol=0)


def test_nvi_pvi_on_a_hand_computed_example():
    close = np.array([[10.0, 11.0, 9.9, 9.9, 12.0]])
    volume = np.array([[100.0, 90.0, 120.0, 80.0, 80.0]])
    # day 1: volume falls -> NVI moves +10%; day 2: rises -> PVI moves -10%; day 3: falls, price
    # flat -> NVI unchanged; day 4: volume equal -> neither moves
    np.testing.assert_allclose(ind.nvi(close, volume)[0], [1000, 1100, 1100, 1100, 1100], rtol=1e-15)
    np.testing.assert_allclose(ind.pvi(close, volume)[0], [1000, 1000, 900, 900, 900], rtol=1e-15)


def test_eom_on_a_hand_computed_example():
    high = np.array([[10.0, 12.0, 13.0, 13.0]])
    low = np.array([[8.0, 10.0, 9.0, 11.0]])
    vol = np.array([[1e4, 2e4, 4e4, 0.0]])
    # midpoints 9, 11, 11, 12 -> moves 2, 0, 1; times range / volume * 1e4: 2*2/2e4*1e4 = 2, 0, 0 (no volume)
    e = ind.eom(high, low, vol, n=2)
    assert np.isnan(e[0, :2]).all()
    np.testing.assert_allclose(e[0, 2:], [(2.0 + 0.0) / 2, (0.0 + 0.0) / 2])


def test_mfi_cci_degenerate_cases():
    flat = np.full((1, 40), 50.0)
    assert (ind.mfi(flat, flat, flat, np.ones((1, 40)))[0, 14:] == 50).all()  # no flow either way
    assert (ind.cci(flat, flat, flat)[0, 19:] == 0).all()  # no deviation


def test_every_terminal_is_defined_on_every_evaluation_day():
    m = gp.synthetic_market(5, 3, seed=2)
    f, b = m.indicators()
    assert f.shape == (5, oc.NF, 3) and b.shape == (5, oc.NB, 3)
    assert np.isfinite(f).all()
    o = m.ohlcv(window=False)
    assert ind.first_defined(o["open"], o["high"], o["low"], o["close"], o["volume"]) <= WARMUP
    # MA1 and CP are the close; TP the typical price, as float32
    assert np.array_equal(m.floats()[:, 0], m.close32()) and np.array_equal(m.floats()[:, oc.OP_CP], m.close32())


def test_readings_are_the_documented_comparisons(rng):
    m = gp.synthetic_market(3, 400, seed=int(rng.integers(1000)))
    o = m.ohlcv(window=False)
    c, v = o["close"], o["volume"]
    sl = slice(m.start, m.start + m.days)
    _, b = m.indicators()
    nv = ind.nvi(c, v)
    nva = ind.ema(nv, 255)
    line, sig = ind.macd(c)
    cci = ind.cci(o["high"], o["low"], c)
    expect = {"NVIG": nv > nva, "NVIL": nv < nva, "MACDGZ": line > 0, "MACDL": line < sig, "CCIG": cci > 100,
              "CCIL": cci < -100}
    for name, e in expect.items():
        assert np.array_equal(b[:, oc.BOOL_TERMINALS.index(name)], e[:, sl]), name


def test_layouts_and_masks_agree(rng):
    m = gp.synthetic_market(3, 134, seed=int(rng.integers(1000)))
    f, b = m.floats("sid"), m.bools("sid")
    assert np.array_equal(m.floats("dis"), f.transpose(2, 1, 0)) and np.array_equal(m.bools("dis"), b.transpose(2, 1, 0))
    M = m.masks("swm")
    assert M.dtype == np.uint64 and M.shape == (3, 3, NMASK) and np.array_equal(m.masks("wms"), M.transpose(1, 2, 0))
    for s, a, c, d in [(1, 3, 15, 130), (2, 16, 0, 63), (0, 4, 9, 64)]:  # day 130 = word 2, bit 2; 63 and 64: a word's edges
        assert bool((int(M[s, d // 64, a * 17 + c]) >> (d % 64)) & 1) == bool(f[s, a, d] < f[s, c, d])
        assert bool((int(M[s, d // 64, 289 + 5]) >> (d % 64)) & 1) == bool(b[s, 5, d])
    every = np.array([[[(int(M[s, d // 64, k]) >> (d % 64)) & 1 for d in range(134)] for k in (5, 16 * 17 + 2, 289 + 13)]
                      for s in range(3)], bool)  # [S, 3 masks, D] unpacked bit by bit
    assert np.array_equal(every[:, 0], f[:, 0] < f[:, 5]) and np.array_equal(every[:, 1], f[:, 16] < f[:, 2])
    assert np.array_equal(every[:, 2], b[:, 13].astype(bool))
    assert (M[:, 2] >> np.uint64(6) == 0).all(), "bits past the last day must be 0"


def test_synthetic_market_is_seeded_and_realistic():
    a, b = gp.synthetic_market(8, 300, seed=5), gp.synthetic_market(8, 300, seed=5)
    assert np.array_equal(a.close32(), b.close32())
    assert not np.array_equal(a.close32(), gp.synthetic_market(8, 300, seed=6).close32())
    o = a.ohlcv(window=False)
    assert (o["high"] >= np.maximum(o["open"], o["close"])).all() and (o["low"] <= np.minimum(o["open"], o["close"])).all()
    assert (o["low"] > 0).all() and (o["volume"] > 0).all()
    r = np.diff(np.log(o["close"]), axis=1)
    # volatility clustering: |returns| are autocorrelated; volume rises with the size of the move
    ar = np.abs(r)
    lag1 = np.mean([np.corrcoef(x[:-1], x[1:])[0, 1] for x in ar])
    assert lag1 > 0.05
    assert np.mean([np.corrcoef(x, np.log(v[1:]))[0, 1] for x, v in zip(ar, o["volume"])]) > 0.2
    assert a.days == 300 and a.start == WARMUP and a.history_days == 300 + WARMUP


def test_split_shares_history_and_warms_up_the_test_period():
    m = gp.synthetic_market(4, 500, seed=1)
    train, test = m.split(300)
    assert (train.days, test.days, test.start) == (300, 200, WARMUP + 300)
    assert np.array_equal(test.floats(), m.floats()[:, :, 300:])
    assert np.array_equal(train.bools(), m.bools()[:, :, :300])
    with pytest.raises(LimitError, match="train_days"):
        m.split(500)


def test_buy_and_hold_is_the_trading_arithmetic():
    m = gp.synthetic_market(3, 50, seed=3)
    c = m.close32().astype(np.float64)
    for s in range(3):
        n = math.floor((10000.0 - 1.0) / c[s, 0])
        money = 9999.0 - n * c[s, 0] + n * c[s, -1] - 1.0
        assert m.buy_and_hold()[s] == (money - 10000.0) / 10000.0


def write_csv(path, rows, header="Date,Open,High,Low,Close,Volume"):
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def good_rows(n, start="2001-01-01"):
    d0 = np.datetime64(start)
    return [f"{d0 + k},{10 + k % 7},{11 + k % 7},{9 + k % 7},{10.5 + k % 7},{1000 + k}" for k in range(n)]


def test_load_csv_reads_files_and_aligns_stocks(tmp_path):
    a = write_csv(tmp_path / "AAA.csv", good_rows(WARMUP + 5))
    b = write_csv(tmp_path / "BBB.csv", good_rows(WARMUP + 8, "2000-12-29"), header="date,close,open,high,low,volume,adj close")
    m = gp.load_csv([a, b])
    assert m.names == ("AAA", "BBB") and m.stocks == 2 and m.days == 5
    assert m.dates[0] == np.datetime64("2001-01-01")


@pytest.mark.parametrize("edit,message", [
    (lambda r: ["Date,Open,High,Low,Volume"] + r, "missing column"),
    (lambda r: ["Date,Open,High,Low,Close,Volume"] + r[:3] + [r[3].replace(",1000", ",nan", 1).rsplit(",", 1)[0] + ",nan"] + r[4:], "NaN"),
    (lambda r: ["Date,Open,High,Low,Close,Volume"] + r[:3] + ["2001-01-04,10,11,9,-1,1000"] + r[4:], "not a positive price"),
    (lambda r: ["Date,Open,High,Low,Close,Volume"] + r[:3] + ["2001-01-04,10,11,9,x,1000"] + r[4:], "not a number"),
    (lambda r: ["Date,Open,High,Low,Close,Volume"] + [r[1], r[0]] + r[2:], "not sorted"),
    (lambda r: ["Date,Open,High,Low,Close,Volume"] + [r[0], r[0]] + r[2:], "duplicate date"),
    (lambda r: ["Date,Open,High,Low,Close,Volume"] + r[:WARMUP], f"at least warmup \\+ 1 = {WARMUP + 1}"),
])
def test_load_csv_errors_name_the_problem(tmp_path, edit, message):
    rows = edit(good_rows(WARMUP + 3))
    path = tmp_path / "x.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises((DataError, LimitError), match=message):
        gp.load_csv(path)


def test_market_rejects_bad_arrays():
    ok = np.ones((2, WARMUP + 2))
    with pytest.raises(ShapeError):
        gp.Market(ok, ok, ok, ok, np.ones((2, WARMUP + 3)))
    with pytest.raises(LimitError, match="at least warmup"):
        gp.Market(*(np.ones((1, WARMUP)),) * 5)
    bad = ok.copy()
    bad[1, 7] = 0.0
    with pytest.raises(DataError, match="non-positive price"):
        gp.Market(ok, ok, ok, bad, ok)
    bad[1, 7] = np.nan
    with pytest.raises(DataError, match="NaN"):
        gp.Market(ok, ok, bad, ok, ok)
    for past_float32 in (1e39, 1e-46):  # (finite and positive in float64: inf or 0 once stored)
        bad[1, 7] = past_float32
        with pytest.raises(DataError, match=r"close = .* at stock 1, day 7 is outside the range .*float32"):
            gp.Market(ok, ok, ok, bad, ok)
    edge = ok.copy()
    edge[0, 3] = float(np.finfo(np.float32).max)  # (the largest stored price is accepted)
    gp.Market(ok, ok, ok, edge, ok)


@pytest.mark.skipif(not HAS_SAMPLE, reason="bokeh-sampledata (the 'sample' extra) is not installed")
def test_sample_market_is_real_adjusted_data():
    m = gp.sample_market()
    assert m.names == ("AAPL", "IBM", "MSFT", "GOOG") and m.history_days == 2148
    assert str(m.dates[0]) == "2004-08-19" and str(m.dates[-1]) == "2013-03-01"
    c = m.ohlcv(window=False)["close"]
    # adjusted prices: no split-sized overnight jumps (AAPL split 2:1 in 2005 in the raw data)
    assert np.abs(np.diff(np.log(c), axis=1)).max() < 0.35
