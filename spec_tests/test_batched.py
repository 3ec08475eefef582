"""Batched execution of the interpreter (issue 14) changes no bit: every example and a set of
kernels covering every batched rule, control-flow split and error path run with batching off
(``CUTILE_BATCH=0``) and on, and their outputs, UB reports and race reports are compared
exactly.  Also: every IR op has a batched rule or a reasoned place on the fallback list."""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import pytest

import cutile as ct
from cutile.interp import batch
from cutile.ir.core import OPS

EXAMPLES_DIR = os.path.join(os.path.dirname(__file__), "..", "examples")
# Every example module with a ``run(launch=...)`` (demo.py runs them; test_*.py are tests).
EXAMPLES = sorted(f[:-3] for f in os.listdir(EXAMPLES_DIR)
                  if f.endswith(".py") and f != "demo.py" and not f.startswith("test_"))


def _snap(x):
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (list, tuple)):
        return tuple(_snap(y) for y in x)
    return None


def _outcome(fn):
    """What ``fn`` produced: its snapshots, or the error's type and text."""
    try:
        return ("ok", fn())
    except Exception as e:          # the report itself is compared
        return ("error", type(e).__name__, str(e))


def both(monkeypatch, fn, **env):
    """``fn()`` with batching off and on (fresh inputs each time): the outcomes, and what the
    batched run did."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CUTILE_BATCH", "0")
    off = _outcome(fn)
    monkeypatch.setenv("CUTILE_BATCH", "1")
    on = _outcome(fn)
    return off, on, dict(batch.LAST)


@pytest.fixture(autouse=True)
def _interp():
    prev = ct.executors._override
    ct.set_backend("interp")
    yield
    ct.set_backend(prev)                # None: CUTILE_BACKEND decides again


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_same_bits_batched_or_not(monkeypatch, name):
    """R-EXEC-7: every launch of every example leaves the same bits in every argument."""
    sys.path.insert(0, EXAMPLES_DIR)
    try:
        mod = importlib.import_module(name)
    finally:
        sys.path.remove(EXAMPLES_DIR)
    modes = []

    def run():
        shots = []

        def launch(stream, grid, kernel, args):
            ct.launch(stream, grid, kernel, args)
            modes.append(batch.LAST.get("mode"))
            shots.append(_snap(list(args)))

        err = mod.run(launch=launch)
        return shots, err

    off, on, last = both(monkeypatch, run)
    assert off == on
    assert off[0] == "ok"
    _no_internal_errors(last)


# -- kernels covering the batched rules -------------------------------------------------------
@ct.kernel
def k_elementwise(x, y, out, T: ct.Constant[int]):
    b = ct.bid(0)
    a = ct.load(x, (b,), (T,), padding_mode=ct.PaddingMode.NAN)
    c = ct.load(y, (b,), (T,), padding_mode=ct.PaddingMode.ZERO)
    h = (a.astype(ct.float16) * c.astype(ct.float16)).astype(ct.float32)
    r = ct.where(a > c, ct.exp(a) - c, ct.sqrt(ct.abs(c)) + h)
    r = ct.maximum(r, a * 0.5) + ct.full((T,), 1, dtype=ct.float32) * b
    ct.store(out, (b,), r)


@ct.kernel
def k_reduce_shape(x, out, idx, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b, 0), (2, T), padding_mode=ct.PaddingMode.NEG_INF)
    s = ct.sum(ct.permute(t, (1, 0)), axis=0, keepdims=True)          # (1, 2)
    m = ct.max(t, axis=1, keepdims=True)                               # (2, 1)
    r = ct.reshape(t - ct.broadcast_to(m, (2, T)), (2 * T,))
    ct.store(out, (b, 0), ct.reshape(r, (2, T)) + ct.reshape(s, (2, 1)))
    ct.store(idx, (b,), ct.reshape(ct.argmax(t, axis=1), (2,)))


@ct.kernel
def k_mma(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(TM, TK))):
        ta = ct.load(a, (bx, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        tb = ct.load(b, (k, by), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ta, tb, acc)
    ct.store(c, (bx, by), acc.astype(c.dtype))


@ct.kernel
def k_mma_shared(a, b, c, d, T: ct.Constant[int]):
    """Whole tiles that blocks share (the batched mma over distinct tiles): a K loop, rows
    picked by bid(1), one B tile for all, a branch taken by part of the batch, and loaded
    tiles that other ops read too."""
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((T, T), dtype=c.dtype)
    for k in range(ct.num_tiles(a, axis=1, shape=(T, T))):
        ta = ct.load(a, (bx, k), (T, T))
        tb = ct.load(b, (k, by), (T, T))
        acc = ct.mma(ta, tb, acc)
    ta = ct.load(a, (bx, 0), (T, T))
    tb = ct.load(b, (0, by), (T, T))
    swapped = ct.mma(tb, ta, acc)
    shared = ct.mma(ta, ct.load(b, (0, 0), (T, T)), acc)
    if bx % 2 == 0:
        shared = ct.mma(ta, tb, shared) + ta.astype(c.dtype)
    ct.store(c, (bx, by), swapped + shared)
    ct.store(d, (bx, by), acc)


@ct.kernel
def k_divergent(x, out, T: ct.Constant[int]):
    b = ct.bid(0)
    if b == 5:
        return
    t = ct.load(x, (b,), (T,))
    if b % 3 == 0:
        t = t * 2
    else:
        t = t + 1
    acc = ct.zeros((T,), dtype=ct.float32)
    for i in range(b % 4, 6, 1 + b % 2):           # trip counts differ per block
        acc = acc + t * i
    n = 0
    while n < 3:
        n += 1
        acc = acc + 1
    ct.store(out, (b,), acc)


@ct.kernel
def k_gather_scatter(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    i = ct.arange(T, dtype=ct.int32) + b * T - 2
    t = ct.gather(x, i, padding_value=-1.0)
    ct.scatter(y, i + 2, t * 3, mask=(i % 2) == 0)


@ct.kernel
def k_race(x, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b // 2,), (T,))
    ct.store(x, (b // 2,), t + 1)


@ct.kernel
def k_read_write_race(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (0,), (T,))
    ct.store(y, (b,), t)
    ct.store(x, (3,), t + b)


@ct.kernel
def k_same_flag(x, flag, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(flag, (0,), ct.full((1,), 7, dtype=ct.int32))
    ct.store(x, (b,), ct.load(x, (b,), (T,)) * 2)


@ct.kernel
def k_oob(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(y, (b,), ct.load(x, (b * 2,), (T,)))


@ct.kernel
def k_undetermined(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(y, (b,), ct.load(x, (b,), (T,), padding_mode=ct.PaddingMode.UNDETERMINED) + 1)


@ct.kernel
def k_divzero(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b,), (T,))
    ct.store(y, (b,), t // (t - 3))


@ct.kernel
def k_slice(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    s = x.slice(0, 2, 2 + T * ct.num_blocks(0))
    ct.store(y, (b,), ct.load(s, (b,), (T,)) + ct.load(x.slice(0, b, b + T), (0,), (T,)))


@ct.kernel
def k_scan_shape(x, out, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b, 0), (2, T), padding_mode=ct.PaddingMode.ZERO)
    c = ct.cat((ct.cumsum(t, 1), ct.cumsum(t, 0, reverse=True)), axis=0)     # (4, T)
    e = ct.extract(c, (1, 0), (2, T))
    r = ct.insert(t, (0, 0), e * 2)
    bits = ct.bitcast(ct.bitcast(r, ct.int32) ^ 1, ct.float32)
    ct.store(out, (b, 0), bits)


@ct.kernel
def k_exits(x, out, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b,), (T,))
    acc = ct.zeros((T,), dtype=ct.float32)
    for i in range(8):
        if i == b % 5:
            break                                   # blocks break at different iterations
        if i % 2 == b % 2:
            continue
        acc = acc + t * i
    n = 0
    s = ct.sum(ct.abs(t))
    while s > 1.0:                                  # data-dependent trip count
        s = s * 0.5
        n += 1
        if n > 6 + b % 3:
            break
    if b == 3:
        return
    for j in range(b % 3, 4):
        if j == 2 and b % 4 == 1:
            return                                  # return from inside a loop
        acc = acc + j
    ct.store(out, (b,), acc + n)


@ct.kernel
def k_mixed_tiles(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b, 0), (1, T))                       # x is written too: logged
    u = ct.load(x, (b, 1), (1, T // 2))                  # another tiling of the same buffer
    w = ct.load(x, (0, 0), (1, T))                       # every block reads row 0
    ct.store(y, (b, 0), t + w)
    ct.store(x, (b + 8, 0), ct.cat((u, u), axis=1) + t)  # rows no block reads


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _case(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    cases = {
        "elementwise": lambda: (k_elementwise, (9,), [_f32(rng, 70), _f32(rng, 70),
                                                      np.zeros(70, np.float32), 8]),
        "reduce_shape": lambda: (k_reduce_shape, (6,), [_f32(rng, 11, 13),
                                                        np.zeros((12, 16), np.float32),
                                                        np.zeros(12, np.int32), 16]),
        "mma": lambda: (k_mma, (3, 2), [_f32(rng, 40, 50), _f32(rng, 50, 30),
                                        np.zeros((40, 30), np.float32), 16, 16, 16]),
        "mma_shared": lambda: (k_mma_shared, (4, 3), [_f32(rng, 64, 48), _f32(rng, 48, 48),
                                                      np.zeros((64, 48), np.float32),
                                                      np.zeros((64, 48), np.float32), 16]),
        "mma_shared_f16": lambda: (k_mma_shared, (4, 3), [
            _f32(rng, 64, 16).astype(np.float16), _f32(rng, 16, 48).astype(np.float16),
            np.zeros((64, 48), np.float16), np.zeros((64, 48), np.float16), 16]),
        "divergent": lambda: (k_divergent, (11,), [_f32(rng, 88), np.zeros(88, np.float32),
                                                   8]),
        "gather_scatter": lambda: (k_gather_scatter, (7,), [_f32(rng, 50),
                                                            np.zeros(60, np.float32), 8]),
        "race": lambda: (k_race, (6,), [np.arange(24, dtype=np.int32), 8]),
        "read_write_race": lambda: (k_read_write_race, (5,), [np.arange(40, dtype=np.float32),
                                                              np.zeros(40, np.float32), 8]),
        "same_flag": lambda: (k_same_flag, (5,), [np.arange(40, dtype=np.int32),
                                                  np.zeros(1, np.int32), 8]),
        "oob": lambda: (k_oob, (6,), [_f32(rng, 64), np.zeros(48, np.float32), 8]),
        "undetermined": lambda: (k_undetermined, (6,), [_f32(rng, 44),
                                                        np.zeros(48, np.float32), 8]),
        "divzero": lambda: (k_divzero, (6,), [np.arange(48, dtype=np.int32),
                                              np.zeros(48, np.int32), 8]),
        "scan_shape": lambda: (k_scan_shape, (5,), [_f32(rng, 9, 8), np.zeros((10, 8),
                                                                            np.float32), 8]),
        "exits": lambda: (k_exits, (10,), [_f32(rng, 80) * 3, np.zeros(80, np.float32), 8]),
        "mixed_tiles": lambda: (k_mixed_tiles, (6,), [_f32(rng, 16, 8),
                                                      np.zeros((8, 8), np.float32), 8]),
        "slice": lambda: (k_slice, (5,), [_f32(rng, 60), np.zeros(40, np.float32), 8]),
    }
    return cases[name]()


CASES = ["elementwise", "reduce_shape", "mma", "mma_shared", "mma_shared_f16", "divergent",
         "exits", "gather_scatter", "scan_shape", "mixed_tiles", "race",
         "read_write_race", "same_flag", "oob", "undetermined", "divzero", "slice"]
UB_CASES = {"race", "read_write_race", "oob", "undetermined", "divzero"}
ENVS = {"default": {}, "shuffled": {"CUTILE_SHUFFLE_BLOCKS": "7"},
        "lax": {"CUTILE_STRICT": "0"}, "tiny_batches": {"CUTILE_BATCH_BYTES": "1"}}


@pytest.mark.parametrize("env", list(ENVS))
@pytest.mark.parametrize("name", CASES)
def test_kernels_same_bits_and_reports(monkeypatch, name, env):
    """R-EXEC-4/7, R-UB-*: outputs bit for bit, and the same error (type and text: line,
    block, other block, element) with batching off and on."""
    def run():
        kernel, grid, args = _case(name)
        try:
            tracker = _launch(kernel, grid, args)
        except ct.UndefinedBehaviorError as e:
            return ("raised", str(e), _snap(args))
        return _snap(args), _tracker_state(tracker)

    off, on, last = both(monkeypatch, run, **ENVS[env])
    assert off[0] == "ok", off
    assert off == on
    _no_internal_errors(last)
    if env == "default":
        assert (off[1][0] == "raised") == (name in UB_CASES), off[1][:2]
    assert last["mode"] == "batched"


def _launch(kernel, grid, args):
    """``ct.launch`` on the interpreter, returning the launch's race tracker (its record of
    writers and readers must not depend on batching either: cutile.testing reads it)."""
    from cutile.interp.machine import run_kernel
    from cutile.launch_args import check_grid
    spec = kernel.specialize(tuple(args))
    return run_kernel(kernel.compile(spec), check_grid(grid), spec.leaves)


def _tracker_state(tracker):
    if tracker is None:
        return None
    return sorted((k[1], e[2].tobytes(), e[3].tobytes()) for k, e in tracker._buffers.items())


def _no_internal_errors(last):
    """A batch may fall back only for a modelled reason, never because a batched rule broke
    (the per-block rerun would hide the bug)."""
    for why in last.get("why", []):
        assert why.startswith(("Fallback", "UB", "OutOfBounds", "PoisonObserved")), why


def test_batching_really_batches(monkeypatch):
    """The well-behaved kernels run without falling back (the speed of issue 14)."""
    monkeypatch.setenv("CUTILE_BATCH", "1")
    for name in ("elementwise", "reduce_shape", "mma", "mma_shared", "divergent", "exits",
                 "gather_scatter", "scan_shape", "mixed_tiles", "slice"):
        kernel, grid, args = _case(name)
        ct.launch(None, grid, kernel, tuple(args))
        assert batch.LAST["mode"] == "batched" and batch.LAST["fallbacks"] == 0, \
            (name, batch.LAST)


def test_every_op_has_a_batched_rule_or_a_reason():
    """Each IR op is batched, a terminator (run by the region runner), or on the reasoned
    per-block fallback list."""
    names = {c.__name__ for c in OPS.values()}
    batched = {c.__name__ for c in batch.BATCHED}
    terminators = {c.__name__ for c in OPS.values() if c.is_terminator}
    missing = names - batched - terminators - set(batch.FALLBACK)
    assert not missing, f"ops with neither a batched rule nor a fallback reason: {missing}"
    assert not batched & set(batch.FALLBACK), "an op is both batched and on the fallback list"
    assert set(batch.FALLBACK) <= names, set(batch.FALLBACK) - names
    assert all(len(r) > 10 for r in batch.FALLBACK.values())


def test_batch_off_runs_per_block(monkeypatch):
    monkeypatch.setenv("CUTILE_BATCH", "0")
    kernel, grid, args = _case("elementwise")
    ct.launch(None, grid, kernel, tuple(args))
    assert batch.LAST["mode"] == "per-block"


@pytest.mark.parametrize("seed", [None, 0, 7, 12345])
def test_block_ids_follow_the_per_block_order(seed):
    """R-EXEC-7: the batched path's block-id array is the per-block launch order, shuffled
    or not (``CUTILE_SHUFFLE_BLOCKS`` permutes both the same way)."""
    from cutile.interp.machine import block_ids, block_order
    for grid in ((5, 1, 1), (3, 4, 1), (2, 3, 4)):
        ids = block_ids(grid, seed)
        assert ids.dtype == np.int64 and ids.shape == (grid[0] * grid[1] * grid[2], 3)
        assert [tuple(r) for r in ids.tolist()] == block_order(grid, seed)


@ct.kernel
def k_twice(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b,), (T,))
    ct.store(y, (b,), t + t)


@pytest.mark.parametrize("name", ["elementwise", "whole_windows"])
def test_race_tracker_state_after_a_launch(monkeypatch, name):
    """R-EXEC-4: the tracker's record of writers (deferred after the last batch) is there
    when asked: ``writer_of`` names the block that wrote each element, batched or not;
    an element stored with the value it held has no writer."""
    if name == "whole_windows":
        x = np.arange(64, dtype=np.float32)
        kernel, grid, args, out = k_twice, (8,), [x, np.zeros(64, np.float32), 8], 1
    else:
        (kernel, grid, args), out = _case(name), 2
    got = {}
    for flag in ("0", "1"):
        monkeypatch.setenv("CUTILE_BATCH", flag)
        a = [np.copy(x) if isinstance(x, np.ndarray) else x for x in args]
        tracker = _launch(kernel, grid, a)
        assert batch.LAST["mode"] == ("per-block" if flag == "0" else "batched")
        got[flag] = [tracker.writer_of(a[out], (i,)) for i in range(a[out].size)]
    assert got["0"] == got["1"]
    assert got["1"][9] == (1, 0, 0) and got["1"][63 if name != "elementwise" else 69] == (
        7 if name != "elementwise" else 8, 0, 0)
    if name == "whole_windows":
        assert got["1"][0] is None          # 0 + 0 stored over 0: not a write
