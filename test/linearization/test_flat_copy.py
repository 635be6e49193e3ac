"""``linearization.flat.copy_if_finite``: the fast tick's guard and copy (ros/fast_tick.py).

Evidence: a NaN, +inf or -inf at any position of buffers of 0-11 numbers and of 5000 (each
lane of the compiled loop and its tail) is found and nothing is written; finite buffers whose
sum overflows (1e308) are not refused; the runs copy exactly their numbers into an unaligned
view of a message's bytes (the node's destination) and leave every other byte as it was.
"""

import numpy as np

from rbd_linearizer.linearization.flat import copy_if_finite


def _message(n):
    # a CDR-like buffer: 4 header bytes, then n float64 slots (unaligned to 8 in memory)
    raw = bytearray(np.random.default_rng(n).integers(0, 256, 4 + 8 * n, dtype=np.uint8))
    return raw, np.frombuffer(raw, np.float64, n, 4)


def test_any_non_finite_number_is_found_and_nothing_written():
    rng = np.random.default_rng(1)
    for size in (*range(12), 5000):
        src = rng.normal(size=size)
        runs = np.array([[0, 1, size]], dtype=np.int64)
        raw, dst = _message(size + 1)
        before = bytes(raw)
        for bad in (np.nan, np.inf, -np.inf):
            for at in sorted({0, size // 2, size - 1} & set(range(size))) or []:
                poisoned = src.copy()
                poisoned[at] = bad
                assert not copy_if_finite(poisoned, runs, dst), (size, at, bad)
                assert bytes(raw) == before
        assert copy_if_finite(src, runs, dst)
        assert dst[1:].tobytes() == src.tobytes()


def test_a_sum_that_overflows_is_not_a_non_finite_number():
    src = np.full(5001, 1e308)
    src[::2] = -1.7e308
    raw, dst = _message(5001)
    assert copy_if_finite(src, np.array([[0, 0, 5001]], dtype=np.int64), dst)
    assert np.array_equal(dst, src)


def test_the_runs_copy_their_numbers_and_nothing_else():
    rng = np.random.default_rng(2)
    src = rng.normal(size=100)
    src[40:50] = -0.0  # signs of zero kept
    runs = np.array([[0, 3, 10], [35, 20, 30], [99, 60, 1], [10, 0, 0]], dtype=np.int64)
    raw, dst = _message(70)
    want = dst.copy()
    for s, d, n in runs:
        want[d:d + n] = src[s:s + n]
    assert copy_if_finite(src, runs, dst)
    assert dst.tobytes() == want.tobytes()
    assert copy_if_finite(np.empty(0), np.empty((0, 3), dtype=np.int64), dst)  # nothing
