"""How much rounding each variant's floating-point sums can carry: the longest serial chain of roundings.

A floating-point sum formed in any order errs by at most ``L * eps * sum(|x|)`` (to first order), where ``L``
is the longest chain of additions any one input element passes through on its way to the result: the
elements a thread folds one after another, the levels of a tree, the partials a second pass folds, the
atomics that land one after another in one result, the chain of tile prefixes in a single-pass scan.  A tree
has ``L ~ log2(n)``; the other shapes have chains that grow with ``n`` or with the device's SM count.  On data
that is not crafted to round one way, the errors of a chain add like a random walk: about ``sqrt(L) * eps *
sum(|x|)`` (``gpureduce.testing.error_bound`` bounds with that).

The chains below were read off the kernels (the launch shapes and loops in cuda/variants/ and cuda/axis/,
CUB's sm_90 tunings for cub), for the larger of float32 and float64, as upper bounds.  ``CHAINS`` is keyed by
the variant names of cuda/abi/variants.def; a CPU test checks that the two lists agree, so a new variant
cannot come without its accuracy.  For a scan, ``n`` is the scanned length and the chain is that of the last
element (the longest).  Integer results are exact whatever the chain (they wrap like NumPy's).
"""
from __future__ import annotations

import math

DEFAULT_SMS = 132  # an H100/H200, where no device can be asked (the chains grow with the SM count)


def _lg(n):
    return math.ceil(math.log2(max(n, 2)))


def _passes(n, tile_log2):
    """Passes of the multi-pass tree driver over n elements with tiles of 2**tile_log2 elements."""
    return math.ceil(_lg(n) / tile_log2)


def _cdiv(a, b):
    return -(-a // b)


def _lookahead_chain(n):
    """`lookahead`'s chain (windows of 64 tiles of 8192 or 4096 elements), which `pipelined` falls back to."""
    return max(_cdiv(n + 3, 524288) + 81, _cdiv(n + 1, 262144) + 49)


# (kind, name) -> (formula text, chain(n, sms)) for a whole contiguous array (the variant's flat kernel)
CHAINS = {
    ("reduce", "global_baseline"): ("15 per pass of 2048-element tiles", lambda n, s: 15 * _passes(n, 11)),
    ("reduce", "interleaved_divergent"): ("a tree: 8 per pass of 256", lambda n, s: 8 * _passes(n, 8)),
    ("reduce", "interleaved_bank_conflict"): ("a tree: 8 per pass of 256", lambda n, s: 8 * _passes(n, 8)),
    ("reduce", "sequential_addressing"): ("a tree: 8 per pass of 256", lambda n, s: 8 * _passes(n, 8)),
    ("reduce", "first_add_during_load"): ("a tree: 9 per pass of 512", lambda n, s: 9 * _passes(n, 9)),
    ("reduce", "unroll_last_warp"): ("a tree: 9 per pass of 512", lambda n, s: 9 * _passes(n, 9)),
    ("reduce", "complete_unroll"): ("a tree: log2(n) + 7", lambda n, s: _lg(n) + 7),
    ("reduce", "shuffle"): ("a tree: 9 per pass of 512", lambda n, s: 9 * _passes(n, 9)),
    ("reduce", "thread_coarsening"): ("n / (1024 SMs) folded per thread, then two trees",
                                      lambda n, s: max(_cdiv(n, 1024 * s), 16) + _cdiv(s, 64) + 14),
    ("reduce", "atomic_block"): ("n / 512 atomic additions into one result",
                                 lambda n, s: _cdiv(n, 512) + 8),
    ("reduce", "atomic_warp"): ("up to 64 SMs atomic additions into one result (one per warp)",
                                lambda n, s: _cdiv(n, 2048 * s) + min(64 * s, _cdiv(n, 32)) + 3),
    ("reduce", "two_pass"): ("n / 262144 folded per thread, then two trees",
                             lambda n, s: _cdiv(n, 262144) + 17),
    ("reduce", "cub"): ("16 per 122880 SMs elements folded per thread, then trees",
                        lambda n, s: max(16 * _cdiv(n, 122880 * s) + _cdiv(15 * s, 128),
                                         8 * _cdiv(n, 81920 * s) + _cdiv(5 * s, 32)) + 22),
    ("reduce", "auto"): ("n / (8192 SMs) folded per thread, then trees",
                         lambda n, s: _cdiv(n, 8192 * s) + _cdiv(s, 64) + 19),
    ("reduce", "exact"): ("one: integer additions, the exact sum rounded once", lambda n, s: 1),
    ("scan", "sequential"): ("one thread: n - 1 additions in a row", lambda n, s: max(n - 1, 1)),
    ("scan", "kogge_stone"): ("10 per level of 512-element tiles", lambda n, s: 10 * _passes(n, 9)),
    ("scan", "brent_kung"): ("11 per level of 1024-element tiles", lambda n, s: 11 * _passes(n, 10) + 8),
    ("scan", "warp_shuffle"): ("21 per level of 512-element tiles", lambda n, s: 21 * _passes(n, 9)),
    ("scan", "hierarchical"): ("28 per level of 4096-element tiles",
                               lambda n, s: 28 * math.ceil(math.log2(n + 3) / 11) + 15),
    ("scan", "reduce_then_scan"): ("2 n / (8192 SMs) per thread, then the block totals in a row",
                                   lambda n, s: 2 * _cdiv(n + 3, 8192 * s) + _cdiv(s, 64) + 53),
    # The look-back tiles (cuda/variants/lookback_tiles.cuh): 8192 elements of 32 per thread for 4-byte types,
    # 4096 of 16 for 8-byte ones; a thread's fold and scan of its items are the 2 x 32 (or 16) of the constants.
    ("scan", "decoupled_lookback"): ("n / 4096: each tile's prefix adds to the one before",
                                     lambda n, s: max(_cdiv(n + 3, 8192) + 74, _cdiv(n + 1, 4096) + 42)),
    ("scan", "ordered_lookback"): ("n / 131072: each window's prefix (32 tiles of 4096 or more) adds to the one "
                                   "before, then a warp scan of the window's tiles",
                                   lambda n, s: max(_cdiv(n + 3, 262144) + 80, _cdiv(n + 1, 131072) + 48)),
    ("scan", "lookahead"): ("n / 262144: each window's prefix (64 tiles of 4096 or more) adds to the one "
                            "before, then a warp scan of the window's tiles, two per lane",
                            lambda n, s: _lookahead_chain(n)),
    # The pipelined tiles (cuda/variants/pipeline_tiles.cuh): 9216 elements of 36 per thread (4-byte inputs,
    # int32 -> int64 included), 5632 of 22 (8-byte); P(w) folds one window sum after another.  The bound counts
    # windows of 64 tiles of 5120 (fewer elements than any tile, so never fewer windows).  Where its bulk copies
    # cannot run it runs lookahead, whose chain is longer for large n: the bound is the longer of the two.
    ("scan", "pipelined"): ("n / 262144: each window's sum (64 tiles of 5120 or more) adds to the prefix before "
                            "it, then a warp scan of the window's tiles, two per lane (lookahead's where it "
                            "falls back)",
                            lambda n, s: max(_cdiv(n + 3, 327680) + 97, _lookahead_chain(n))),
    ("scan", "cub"): ("n / 2688: each tile's prefix adds to the one before",
                      lambda n, s: _cdiv(n, 2688) + 40),
    ("scan", "exact"): ("one: each prefix exact in integers, rounded once", lambda n, s: 1),
    ("scan", "auto"): ("n / 4096: each tile's prefix adds to the one before (a look-back; floating "
                       "sums fold per window of 64 tiles, fewer)",
                       lambda n, s: max(_cdiv(n + 3, 8192) + 74, _cdiv(n + 1, 4096) + 42)),
}

# The axis kernels (variants marked "axes", for axis=, strided layouts, dtype=, float16 and complex): along a
# reduced or scanned axis of length R a warp lane folds its share of the row in a row (a thread the whole row
# for rows shorter than 16 bytes, the whole column for columns of up to 32 elements: within R / 4 + 40); a scan of
# one long row in chunks adds the chunk totals in a row too.
AXIS_CHAINS = {
    "reduce": ("R / 4 + 40 along an axis of length R (the axis kernels)", lambda n, s: _cdiv(n, 4) + 40),
    "scan": ("R / 4 + min(64 SMs, R / 2048) + 40 along an axis of length R (the axis kernels)",
             lambda n, s: _cdiv(n, 4) + min(64 * s, n // 2048) + 40),
}


def chain(kind, name, n, sms=None, flat=True):
    """The longest chain of roundings of variant `name` over `n` elements on a device of `sms` SMs."""
    sms = sms or DEFAULT_SMS
    length = CHAINS[kind, name][1](n, sms)
    return length if flat else max(length, AXIS_CHAINS[kind][1](n, sms))


def describe(kind, name):
    """One line for the docs: the chain in words."""
    return CHAINS[kind, name][0]
