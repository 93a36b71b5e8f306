"""`fast_exp(x)`: the one exp of minigrad's Numba kernels (softmax family, attention, LSTM cell,
GELU).

Why it exists: the pip build of llvmlite has no SVML, so `math.exp` in a Numba loop is a
scalar libm call and the loop does not vectorise (a masked softmax over (1024, 256, 256)
float32 took 245 ms with it, as long as numpy's composition). fast_exp is plain arithmetic
that LLVM turns into SIMD code: exp(x) = 2**n * exp(r) with n = round(x / ln2) and
r = x - n * ln2 (ln2 in a high part whose product with n is exact, plus a low part), exp(r)
by a polynomial on |r| <= ln2 / 2, and 2**n written straight into the exponent bits.

Contract, for a float32 or float64 scalar x inside @njit code (the result has x's dtype):
- float32: Cephes' expf polynomial, within 2 ulp of np.exp; float64: Taylor series to r**13,
  within 2 ulp of np.exp.
- Below the normal range (x < -87.3 in float32, x < -708.0 in float64) the result is exactly
  0, where np.exp gives subnormal numbers: so exp(-inf) and exp of a very negative score
  vanish cleanly. Above the largest finite result (x > 88.72 / 709.78) it is inf.
- NaN gives NaN.

Its own fastmath flags are set explicitly (FMA contraction only): a function without them
is compiled with the flags of the fastmath kernel that first calls it, and reassociation
would fold `x - n * ln2_high - n * ln2_low` back into `x - n * ln2` and undo the range
reduction (measured: 114 ulp at exp(-700)).

Numba's on-disk cache tracks only the file of the kernel it compiled, not the files of the
functions that kernel calls: after editing this file, delete the kernels' __pycache__ folder
(or run once with NUMBA_CACHE_DIR pointing at an empty folder).
"""

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload

from ._numba_cache import cached_njit

LOG2E = 1.4426950408889634
_FLAGS = {"contract"}


@intrinsic
def _float_from_bits(typingctx, bits):
    """Reinterpret an int32 as a float32, or an int64 as a float64 (a no-op for the vectoriser)."""
    if bits == types.int32:
        result, llvm_type = types.float32, ir.FloatType()
    elif bits == types.int64:
        result, llvm_type = types.float64, ir.DoubleType()
    else:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_type)

    return result(bits), codegen


@cached_njit(fastmath=_FLAGS)
def _exp_f32(x):
    low, high = np.float32(-87.3), np.float32(88.72)
    c = min(max(x, low), high)
    n = np.floor(c * np.float32(LOG2E) + np.float32(0.5))
    r = c - n * np.float32(0.693359375) - n * np.float32(-2.12194440e-4)
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * r * r + r + np.float32(1.0)
    # 2**n for n up to 128: 2**min(n, 127), doubled once more when n is 128
    exponent = np.int32(min(n, np.float32(127.0)))
    # Numba widens int32 sums
    p = p * _float_from_bits(np.int32((exponent + np.int32(127)) << np.int32(23)))
    p = p * np.float32(2.0) if n > np.float32(127.0) else p
    return (
        np.float32(0.0) if x < low else (np.float32(np.inf) if x > high else (p if x == x else x))
    )


@cached_njit(fastmath=_FLAGS)
def _exp_f64(x):
    low, high = -708.0, 709.78
    c = min(max(x, low), high)
    n = np.floor(c * LOG2E + 0.5)
    r = c - n * 6.93145751953125e-1 - n * 1.42860682030941723212e-6
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r * r + r + 1.0
    exponent = np.int64(min(n, 1023.0))
    p = p * _float_from_bits((exponent + np.int64(1023)) << np.int64(52))
    p = p * 2.0 if n > 1023.0 else p
    return 0.0 if x < low else (np.inf if x > high else (p if x == x else x))


def fast_exp(x):
    """exp(x) for a float32 or float64 scalar; callable from @njit code only (see the module
    docstring for the contract)."""
    raise NotImplementedError("fast_exp is only available inside Numba kernels")


@overload(fast_exp, jit_options={"fastmath": _FLAGS})
def _fast_exp_overload(x):
    if x == types.float32:
        return lambda x: _exp_f32(x)
    if x == types.float64:
        return lambda x: _exp_f64(x)
    return None
