"""Matrix multiply: ``mma`` (accumulate) and ``matmul``/``@`` (R-MM-1..5).

Both lower to one IR ``Mma`` whose operands have equal rank and already-broadcast batch
dimensions; ``matmul`` adds a zero accumulator of R-MM-4's dtype and converts the result back
to the operands' common dtype.  Numerics: ``cutile.interp.numerics.matmul``.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import tile_op
from ..lang.values import TileV, describe
from .classes import Tile

# R-MM-2: operand dtype -> accepted accumulator dtypes (the first is matmul's, R-MM-4).
ACC_DTYPES = {
    dt.float16: (dt.float16, dt.float32),
    dt.bfloat16: (dt.float32,),
    dt.float32: (dt.float32,),
    dt.tfloat32: (dt.float32,),
    dt.float64: (dt.float64,),
    dt.float8_e4m3fn: (dt.float16, dt.float32),
    dt.float8_e5m2: (dt.float16, dt.float32),
    dt.int8: (dt.int32,),
    dt.uint8: (dt.int32,),
}
_FP8 = (dt.float8_e4m3fn, dt.float8_e5m2)


def _tile(v, what) -> TileV:
    v = coerce.fval(v)
    if not isinstance(v, TileV):
        raise TileTypeError(f"Expected a tile for {what}, got {describe(v)}")
    return v


def _shapes(x: TileV, y: TileV) -> tuple[tuple, tuple]:
    """(batch, output shape) of 2-D/3-D operands (R-MM-1)."""
    xs, ys = x.shape, y.shape
    if len(xs) > 3 or len(ys) > 3:
        raise TileTypeError(f"Matrix multiplication supports tiles of rank 2 or 3 (after "
                            f"promoting 1-D operands), got shapes {xs} and {ys}")
    if xs[-1] != ys[-2]:
        raise TileTypeError(f"Incompatible shapes for matrix multiplication: {xs} and {ys}")
    try:
        batch = coerce.broadcast_shapes(xs[:-2], ys[:-2])
    except TileTypeError:
        raise TileTypeError(f"Incompatible shapes for matrix multiplication: batch dimensions "
                            f"of {xs} and {ys} are not broadcastable") from None
    return batch, batch + (xs[-2], ys[-1])


def _emit(x: TileV, y: TileV, acc: TileV, batch: tuple) -> TileV:
    x = coerce.broadcast(x, batch + x.shape[-2:])
    y = coerce.broadcast(y, batch + y.shape[-2:])
    return current().emit_value(ops.Mma(x.value, y.value, acc.value))


@tile_op
def mma(x: Tile, y: Tile, /, acc: Tile, *, use_fast_acc: bool = False) -> Tile:
    """``x @ y + acc`` accumulated in ``acc``'s dtype (R-MM-1..3); no promotion is applied.

    >>> acc = ct.mma(a, b, acc)               # (M, K) @ (K, N) + (M, N) float32
    """
    x, y, acc = _tile(x, "x"), _tile(y, "y"), _tile(acc, "acc")
    if len(x.shape) < 2 or len(y.shape) < 2:
        raise TileTypeError(f"mma() expects x and y to be at least 2D, got shapes {x.shape} "
                            f"and {y.shape}")
    mixed_int8 = {x.dtype, y.dtype} == {dt.int8, dt.uint8}
    if x.dtype is not y.dtype and not mixed_int8:
        raise TileTypeError(f"x and y must have the same dtype, got {x.dtype.name} and "
                            f"{y.dtype.name}")
    if x.dtype not in ACC_DTYPES:
        raise TileTypeError(f"Unsupported input dtype {x.dtype.name} for mma")
    if acc.dtype not in ACC_DTYPES[x.dtype]:
        allowed = ", ".join(d.name for d in ACC_DTYPES[x.dtype])
        raise TileTypeError(f"Unsupported acc dtype {acc.dtype.name} for {x.dtype.name} "
                            f"inputs (expected {allowed})")
    fast = coerce.const_bool(coerce.fval(use_fast_acc), "use_fast_acc")
    if fast and x.dtype not in _FP8:
        raise TileTypeError(f"use_fast_acc is only supported for fp8 inputs, got "
                            f"{x.dtype.name}")
    batch, out = _shapes(x, y)
    if acc.shape != out:
        raise TileTypeError(f"Expect acc shape to be {out}, got {acc.shape}")
    return _emit(x, y, acc, batch)


@tile_op
def matmul(x: Tile, y: Tile, /) -> Tile:
    """``x @ y`` in the operands' common dtype, accumulated per R-MM-4 (1-D operands allowed).

    >>> c = a @ b                             # (M, K) @ (K, N) -> (M, N)
    >>> d = ct.matmul(v, b)                   # (K,) @ (K, N) -> (N,)
    """
    x, y = _tile(x, "x"), _tile(y, "y")
    if len(x.shape) == 0 or len(y.shape) == 0:
        raise TileTypeError(f"matmul() expects x and y to be at least 1D, got shapes "
                            f"{x.shape} and {y.shape}")
    dtype = coerce.common_dtype(x, y)             # R-MM-4: promotion errors propagate
    if dtype not in ACC_DTYPES:
        raise TileTypeError(f"Unsupported input dtype {dtype.name} for matmul")
    x, y = coerce.convert(x, dtype), coerce.convert(y, dtype)
    squeeze_m, squeeze_n = len(x.shape) == 1, len(y.shape) == 1
    if squeeze_m:                                 # (k,) -> (1, k)
        x = current().emit_value(ops.Reshape(x.value, (1,) + x.shape))
    if squeeze_n:                                 # (k,) -> (k, 1)
        y = current().emit_value(ops.Reshape(y.value, y.shape + (1,)))
    batch, out = _shapes(x, y)
    acc = coerce.constant(0, ACC_DTYPES[dtype][0], out)
    r = coerce.convert(_emit(x, y, acc, batch), dtype)
    final = batch + ((out[-2],) if not squeeze_m else ()) + ((out[-1],) if not squeeze_n else ())
    if final != out:
        r = current().emit_value(ops.Reshape(r.value, final))
    return r


# R-MM-6: input dtype -> scale dtype -> allowed scaling block sizes B = K // K_s (acc: f32).
SCALED = {
    dt.float8_e4m3fn: {dt.float8_e8m0fnu: (32,)},
    dt.float8_e5m2: {dt.float8_e8m0fnu: (32,)},
    dt.float4_e2m1fn: {dt.float8_e8m0fnu: (16, 32), dt.float8_e4m3fn: (16,),
                       dt.float8_e5m3fnu: (16, 32)},
}


@tile_op
def mma_scaled(x: Tile, x_scale: Tile, y: Tile, y_scale: Tile, /, acc: Tile) -> Tile:
    """Block-scaled ``acc + (x * x_scale) @ (y * y_scale)`` (R-MM-6): every ``B = K // K_s``
    consecutive k share one scale.  f8 inputs with float8_e8m0fnu scales (B = 32), or f4
    inputs with e8m0 (B = 16, 32), e4m3 (B = 16) or e5m3 (B = 16, 32) scales; acc float32.

    >>> acc = ct.mma_scaled(a, a_scale, b, b_scale, acc)   # (M,K) (M,K/32) (K,N) (K/32,N)
    """
    names = ("x", "x_scale", "y", "y_scale", "acc")
    x, xs, y, ys, acc = (_tile(v, n) for v, n in zip((x, x_scale, y, y_scale, acc), names))
    for t, n in zip((x, xs, y, ys, acc), names):
        if len(t.shape) not in (2, 3):
            raise TileTypeError(f"Expect shape of `{n}` to be 2D or 3D, got {t.shape}")
    if x.dtype is not y.dtype:
        raise TileTypeError(f"x and y must have the same dtype, got {x.dtype.name} and "
                            f"{y.dtype.name}")
    if xs.dtype is not ys.dtype:
        raise TileTypeError(f"x_scale and y_scale must have the same dtype, got "
                            f"{xs.dtype.name} and {ys.dtype.name}")
    if x.dtype not in SCALED:
        raise TileTypeError(f"Unsupported input dtype {x.dtype.name} for mma_scaled")
    if xs.dtype not in SCALED[x.dtype]:
        raise TileTypeError(f"Unsupported scale dtype {xs.dtype.name} for {x.dtype.name} "
                            f"inputs of mma_scaled")
    if acc.dtype is not dt.float32:
        raise TileTypeError(f"Unsupported acc dtype {acc.dtype.name} for mma_scaled "
                            f"(expected float32)")
    if xs.shape[:-1] != x.shape[:-1]:
        raise TileTypeError(f"x_scale shape {xs.shape} is not compatible with x shape {x.shape}")
    if ys.shape[:-2] + ys.shape[-1:] != y.shape[:-2] + y.shape[-1:]:
        raise TileTypeError(f"y_scale shape {ys.shape} is not compatible with y shape {y.shape}")
    blocks = SCALED[x.dtype][xs.dtype]
    k, ks, ax = x.shape[-1], xs.shape[-1], len(x.shape) - 1
    if k % ks or k // ks not in blocks:
        raise TileTypeError(
            f"x.shape[{ax}] must be an exact multiple of x_scale.shape[{ax}] with scaling block "
            f"size B = K // K_s in {{{', '.join(map(str, blocks))}}}, got x.shape[{ax}] = {k} "
            f"and x_scale.shape[{ax}] = {ks}")
    if ys.shape[-2] != ks:
        raise TileTypeError(f"y_scale shape {ys.shape} is not compatible with y shape {y.shape}: "
                            f"expected {ks} scale rows")
    batch, out = _shapes(x, y)
    if acc.shape != out:
        raise TileTypeError(f"Expect acc shape to be {out}, got {acc.shape}")
    x, xs = (coerce.broadcast(t, batch + t.shape[-2:]) for t in (x, xs))
    y, ys = (coerce.broadcast(t, batch + t.shape[-2:]) for t in (y, ys))
    return current().emit_value(ops.MmaScaled(x.value, xs.value, y.value, ys.value, acc.value))
