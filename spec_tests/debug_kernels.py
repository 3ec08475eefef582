"""Kernels for the debugger tests; the tests find their lines by the ``# mark:`` comments."""

import pdb

import cutile as ct


def helper(t):
    doubled = t * 2
    pdb.set_trace()                               # mark: helper stop
    return doubled


@ct.kernel
def scale(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b,), (T,))
    s = t * 2.0
    breakpoint()                                  # mark: kernel stop
    ct.store(y, (b,), s)


@ct.kernel
def via_helper(x, y, T: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (T,))
    ct.store(y, (ct.bid(0),), helper(t))


@ct.kernel
def running_sum(x, y, T: ct.Constant[int]):
    acc = ct.zeros((T,), dtype=ct.float32)
    for k in range(ct.num_tiles(x, axis=1, shape=(1, T))):
        acc = acc + ct.reshape(ct.load(x, (ct.bid(0), k), (1, T)), (T,))   # mark: watched
    ct.store(y, (ct.bid(0),), ct.reshape(ct.sum(acc), (1,)))


@ct.kernel
def overlapping_writes(x, T: ct.Constant[int]):
    # every block writes the first tile: the writes overlap
    ct.store(x, (0,), ct.full((T,), 1, dtype=x.dtype) * ct.bid(0))


@ct.kernel
def copy(x, y, T: ct.Constant[int]):
    ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (T,)))
