"""The warp-specialised TMA K loop of a wgmma ``Mma`` (``ws_plan.py`` decides where).

The kernel's source takes this shape (``Gen.generate``)::

    <thread 0: tensor maps fenced, per slot a full and an empty mbarrier>   (init)
    cuda.syncthreads()                                  # the whole block, once
    <the loop's bounds and the loads' indices>          (ws_plan.WSPlan.slice_ops)
    if tid < T:                                         # consumers: the kernel as written
        ...
        for k in range(...):                            # the K loop: wait full[s],
            ...                                         # wgmmas, release empty[s - 1]
        ...
    elif tid == T:                                      # the producer (one thread)
        for k in range(...):                            # wait empty[s], expect the
            ...                                         # stage's bytes, TMA loads

Consumers first, the producer in the other branch: in the reverse order ptxas serialised
the wgmmas (C7515, ``tools/gpu/probe_gemm_ws.py``).  Every block barrier in the consumers'
code is a named barrier over their ``T`` threads (``Gen.barrier``).  Slot ``s`` holds the
operand tiles of iterations ``s, s + S, ...``; ``full[s]`` completes a phase when the producer's
expect-tx arrival came and the stage's bytes landed; ``empty[s]`` when each consumer warp
released it (lane 0 of each, predicated: a branch between wgmma groups in flight serialises
them, C7515).  With the deferred wait (``MmaPlanner.deferred_wait``) iteration ``i``'s wgmmas
stay in flight and iteration ``i + 1`` releases slot ``i`` after ``wgmma.wait_group 1``.

Each operand's tile (``R x C``, ``C`` contiguous) is stored as ``tensorcore.swizzle``'s column
panels (``pw = min(C, 128 bytes)`` wide, ``R`` rows, the swizzle of their width): one TMA
box ``(pw, R, 1, ...)`` per panel with the map's swizzle of ``pw`` elements' bytes lands
exactly there (the probes checked the 128- and 64-byte forms against wgmma).
"""

from __future__ import annotations

from ... import dtypes as dt
from ..exprs import cast
from ..smem import smem_itemsize
from ..tensorcore import panel_width
from ..tma import MAP_BYTES, MapSpec
from .index import index_subst
from .staging import stage

# the named barrier of the consumers (0 is the whole block's: cuda.syncthreads)
CONSUMER_BARRIER = 1


def map_specs(ws) -> tuple:
    """The ``tma.MapSpec`` of each operand (A's, then B's) and of the epilogue's store, for
    the launcher."""
    out = tuple(map_spec(ld.shape, ld.result.type.dtype, len(ld.index), p)
                for ld, p in zip(ws.loads, ws.params))
    if ws.store is not None:
        st = ws.store
        out += (map_spec(st.tile.type.shape, st.tile.type.dtype, 2, ws.store_param),)
    return out


def map_spec(shape, dtype, rank: int, param) -> MapSpec:
    R, C = shape[-2:]
    es = dtype.bitwidth // 8
    pw = panel_width(C, 16 // es)
    # the panel's swizzle spans its row; rows of 16 bytes are not swizzled (tensorcore.swizzle)
    sw = pw * es if pw * es >= 32 else 0
    return MapSpec(param, (pw, R) + (1,) * (rank - 2), sw, es)


def stage_bytes(ws) -> int:
    return sum(ld.shape[-1] * ld.shape[-2] * (ld.result.type.dtype.bitwidth // 8)
               for ld in ws.loads)


def ring_barriers(g, ws) -> str:
    """The ring's ``2 S`` mbarriers (full ones, then empty ones): 8 bytes each, kept in
    shared memory (``align16``: never moved to the global workspace), in a slot of their own
    (the shared-buffer form shares buffers of one type and slot between sites: nothing may
    share these while the ring lives)."""
    slot = 1000 + 2 * g.pipe_slots.setdefault(("ws_bars", id(ws.op)), len(g.pipe_slots))
    return g.buffer(("ws_bars", id(ws.op)), slot, dt.uint64, 2 * ws.stages, align16=True)


def bar_at(bars: str, i) -> str:
    return f"smem_addr32({bars}, {i})"


def init(g, ws) -> None:
    """Thread 0 sets up the ring before the block parts; then the whole block meets once."""
    bars = ring_barriers(g, ws)
    S = ws.stages
    g.line("if tid == 0:")
    with g.e.indent():
        for j in range(len(map_specs(ws))):
            g.line(f"fence_tensormap(tmaps + {j * MAP_BYTES})")
        for s in range(S):
            g.line(f"mbar_init({bar_at(bars, s)}, u32(1))")
            g.line(f"mbar_init({bar_at(bars, S + s)}, u32({ws.T // 32}))")
        g.line("fence_mbar_init()")
    g.line("cuda.syncthreads()")


def produce(g, ws, bufs: tuple) -> None:
    """The producer thread's loop: per iteration of the K loop, wait until slot ``s`` is
    free (its previous tiles were released), expect the stage's bytes, issue the boxes."""
    loop = ws.loop
    S = ws.stages
    bars = ring_barriers(g, ws)
    start, stop, step = (g.scalar(v) for v in (loop.start, loop.stop, loop.step))
    pi, pk, ps, pp = g.tmp("pi"), g.tmp("pk"), g.tmp("ps"), g.tmp("pp")
    g.line(f"{pi} = i64(0)")
    g.line(f"for {pk} in range({start}, {stop}, {step}):")
    with g.e.indent():
        g.line(f"{ps} = {pi} % {S}")
        g.line(f"{pp} = ({pi} // {S}) & 1")
        g.line(f"if {pi} >= {S}:")
        g.line(f"    mbar_wait({bar_at(bars, f'{S} + {ps}')}, u32({pp} ^ 1))")
        g.line(f"mbar_expect_tx({bar_at(bars, ps)}, u32({stage_bytes(ws)}))")
        iv = loop.body.args[0]
        sub = index_subst(g, ws.loads, iv, f"i64({pk})")
        for j, (ld, buf) in enumerate(zip(ws.loads, bufs)):
            _issue(g, ld, buf, j, ps, sub, bar_at(bars, ps))
        g.line(f"{pi} = {pi} + 1")


def _issue(g, ld, buf: str, j: int, slot: str, sub: dict, bar: str) -> None:
    """The TMA boxes of one operand tile into slot ``slot`` of ``buf``: one per column
    panel, at element coordinates clamped into int32 (a box wholly outside the array reads
    zeros wherever it is)."""
    R, C = ld.shape[-2:]
    es = ld.result.type.dtype.bitwidth // 8
    pw = panel_width(C, 16 // es)
    nd = len(ld.index)

    def coord(v, scale: int, extra: int = 0) -> str:
        x = sub.get(id(v)) or g.scalar(v)
        e = f"i64({x}) * {scale}" + (f" + {extra}" if extra else "")
        return f"i32(max(min({e}, i64(2147483392)), i64(-2147483648)))"

    lead = [coord(ld.index[d], 1) for d in range(nd - 2)]
    row = coord(ld.index[-2], R)
    for p in range(C // pw):
        col = coord(ld.index[-1], C, p * pw)
        coords = ", ".join([col, row] + lead[::-1])
        dst = f"smem_addr32({buf}, {slot} * {R * C}{f' + {p * R * pw}' if p else ''})"
        g.line(f"tma_load_{nd}d({dst}, tmaps + {j * MAP_BYTES}, {coords}, {bar})")


def consume(g, op, plan, for_op, compute) -> None:
    """The consumers' K step: wait for this iteration's slot, the wgmmas over it
    (``compute``: ``matmul_tc._compute`` with the slot's offsets and wait depth), release."""
    ws = g.mma.ws
    S = ws.stages
    bars = ring_barriers(g, ws)
    iv = for_op.body.args[0]
    ivs, start, step = g.scalar(iv), g.scalar(for_op.start), g.scalar(for_op.step)
    it, s = g.tmp("it"), g.tmp("ws")
    g.line(f"{it} = (i64({ivs}) - i64({start})) // i64({step})")
    g.line(f"{s} = {it} % {S}")
    g.line(f"mbar_wait({bar_at(bars, s)}, u32(({it} // {S}) & 1))")
    deferred = g.mma.deferred_wait(op) is not None
    compute(f"({s} * {plan.M * plan.K}) + ", f"({s} * {plan.K * plan.N}) + ",
            f", operands by TMA, {S}-slot mbarrier ring, producer warpgroup"
            + (", wgmma wait deferred one iteration" if deferred else "")
            + (", result stored by TMA through shared memory" if ws.store is not None else ""),
            1 if deferred else 0)
    lane0 = "((tid & 31) == 0)"
    if deferred:        # this iteration's wgmmas fly on; the previous ones' slot is free
        g.line(f"mbar_arrive_if({bar_at(bars, f'{S} + (({it} + {S - 1}) % {S})')}, "
               f"u32(({it} > 0) & {lane0}))")
    else:
        g.line(f"mbar_arrive_if({bar_at(bars, f'{S} + {s}')}, u32({lane0}))")



def store_by_tma(g, op) -> None:
    """The epilogue's store (``ws_plan._epilogue_store``): every consumer writes its registers
    of the tile into a shared tile over the dead ring's larger buffer (column panels of 128
    bytes, swizzled: ``staging.stage``; ordered after the ring's last wgmma reads by a
    consumer barrier), fences them for the async proxy and meets the others; thread 0 issues
    one TMA store box per panel (the copy engine writes only what lies inside the array: the
    discard of out-of-bounds stores, R-STORE) and waits until they have read shared memory.
    The block may retire while the writes drain."""
    ws = g.mma.ws
    bufs = g.ws_buffers
    ring = max(bufs, key=lambda b: smem_itemsize(g.smem.buffers[b][0]) * g.smem.buffers[b][1])
    R, C = op.tile.type.shape
    d = op.tile.type.dtype
    es = d.bitwidth // 8
    cell = dt.uint16 if d is dt.bfloat16 else d              # its bits, as the array holds them
    buf = g.smem.view(ring, ("ws_store", id(op)), cast(cell), R * C)
    # the tile's registers first: a relayout exchange (a tile without one) may take a retired
    # ring buffer, whose reads the barrier below then also orders before the view's writes
    tv = g.tv(op.tile)
    g.get(op.tile, tv.layout if tv.layout is not None else g.natural(op.tile))
    g.smem_before_write(*bufs)              # every consumer's wgmmas read the ring: done
    g.smem_before_write(buf)
    pw = panel_width(C, 16 // es)
    stage(g, op.tile, buf, C, 16 // es, panels=True)
    g.line("fence_proxy_async()")           # this thread's writes -> the copy engine's reads
    g.smem_sync()
    j = len(ws.loads)
    row = f"i32(max(min(i64({g.scalar(op.index[0])}) * {R}, i64(2147483392)), " \
          "i64(-2147483648)))"
    g.line("if tid == 0:")
    with g.e.indent():
        for p in range(C // pw):
            col = (f"i32(max(min(i64({g.scalar(op.index[1])}) * {C} + {p * pw}, "
                   "i64(2147483392)), i64(-2147483648)))")
            g.line(f"tma_store_2d(tmaps + {j * MAP_BYTES}, {col}, {row}, "
                   f"smem_addr32({buf}, {p * R * pw}))")
        g.line("bulk_commit()")
        g.line("bulk_wait_read0()")         # shared memory read: the block may go on or exit
    g.smem_did_read(buf)
    g.smem_did_read(ring)       # the same bytes: a later site taking the retired ring waits too
