"""Bit tricks for the CPU kernels: popcount / count-trailing-zeros / prefetch as LLVM
intrinsics, and exact fixed-point reciprocals for order-independent harmonic sums.

Harmonic sums ``sum 1/d`` are accumulated as exact integers in 96-bit fixed point
held in three uint64 *limbs* per value: ``value = h0 + h1 / 2**32 + h2 / 2**64``
with ``h1, h2 < 2**32`` after :func:`normalize_limbs`. A contribution ``c / d`` adds
``c * round(2**64 / d)`` split into its 32-bit halves. Integer addition is exact and
associative, so the result does not depend on the order in which batches, threads
or MPI ranks add their parts: closeness on 1, 2 or 4 ranks is bit-identical. The
rounding error is at most ``2**-65`` per term.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["popc64", "ctz64", "prefetch", "recip_fixed", "normalize_limbs", "limbs_to_float"]

MASK32 = np.uint64(0xFFFFFFFF)


@intrinsic
def popc64(typingctx, x):
    """Number of set bits of a uint64 (LLVM ``ctpop``: one POPCNT instruction)."""
    if x != types.uint64:
        return None
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return sig, codegen


@intrinsic
def ctz64(typingctx, x):
    """Index of the lowest set bit of a non-zero uint64 (LLVM ``cttz``)."""
    if x != types.uint64:
        return None
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return sig, codegen


@intrinsic
def prefetch(typingctx, arr, i):
    """Hint the CPU to bring ``arr[i]`` into the caches (LLVM ``prefetch``: read,
    keep in all levels). No effect on results; ``i`` is not bounds-checked and never
    dereferenced, so an index past the end is harmless."""
    if not isinstance(arr, types.Array) or not isinstance(i, types.Integer):
        return None
    sig = types.void(arr, i)

    def codegen(context, builder, signature, args):
        aryty, ity = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = context.cast(builder, args[1], ity, types.intp)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        ptr = builder.bitcast(builder.gep(ary.data, [idx]), i8p)
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def recip_fixed(d):
    """``round(2**64 / d)`` as uint64 for an integer ``d >= 2``."""
    L = np.uint64(d)
    allones = np.uint64(0xFFFFFFFFFFFFFFFF)
    q = allones // L
    rem = allones - q * L + np.uint64(1)  # 2**64 == q * L + rem
    if rem == L:
        q += np.uint64(1)
        rem = np.uint64(0)
    if rem + rem >= L:
        q += np.uint64(1)
    return q


@njit(cache=True, nogil=True)
def normalize_limbs(h0, h1, h2):
    """Propagate carries so that ``h1, h2 < 2**32`` (in place)."""
    s32 = np.uint64(32)
    for i in range(h0.shape[0]):
        c = h2[i] >> s32
        h2[i] &= MASK32
        h1[i] += c
        c = h1[i] >> s32
        h1[i] &= MASK32
        h0[i] += c


def limbs_to_float(h0, h1, h2) -> np.ndarray:
    """float64 value of normalized fixed-point limbs (via long double where the platform
    has one, so that the result is the correctly rounded value in all but rare ties)."""
    frac = (h1 << np.uint64(32)) | h2  # the 64 fraction bits, exact
    ld = np.longdouble
    return (h0.astype(ld) + frac.astype(ld) / ld(2.0 ** 64)).astype(np.float64)
