"""hri_core.se3 batch calls: `out=` buffers, the threaded split and input handling.

Behaviour only (no timing; throughput is in bench/core/run.py):
- `out=` gives bit-identical values to the allocating call, returns the very buffer passed, and
  rejects a wrong type, dtype, shape, layout, read-only buffer or partial overlap with a clear
  message (TypeError / ValueError), leaving the buffer untouched on rejection;
- any thread count gives bit-identical results (threads take 4096-element blocks of the batch);
- a C-contiguous float64 input is read in place (no copy); other inputs are converted.
"""
from __future__ import annotations

import numpy as np
import pytest

from hri_core import se3

# large enough to be split over threads (>= 2 * 16,384 elements per thread in py_batch.hpp)
N_SPLIT = 100_003


def random_twists(n: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xi = rng.normal(size=(n, 6))
    th = rng.uniform(0.0, np.pi, n)
    edge = [0.0, 1e-12, 1e-6, np.pi - 1e-9, np.pi]  # series, closed-form and near-pi branches
    th[: min(n, 5)] = edge[: min(n, 5)]
    xi[:, :3] *= (th / np.maximum(np.linalg.norm(xi[:, :3], axis=1), 1e-300))[:, None]
    return xi


@pytest.fixture
def threads_restored():
    before = se3.get_batch_threads()
    yield
    se3.set_batch_threads(before)


UNARY = [  # (function, input trailing shape, output trailing shape, make input from twists)
    (se3.exp, (6,), (4, 4), lambda xi: xi),
    (se3.log, (4, 4), (6,), lambda xi: se3.exp(xi)),
    (se3.inverse, (4, 4), (4, 4), lambda xi: se3.exp(xi)),
    (se3.so3_exp, (3,), (3, 3), lambda xi: xi[:, :3].copy()),
    (se3.left_jacobian, (6,), (6, 6), lambda xi: xi),
    (se3.rot_to_quat, (3, 3), (4,), lambda xi: se3.exp(xi)[:, :3, :3].copy()),
]


@pytest.mark.parametrize("fn,tin,tout,make", UNARY, ids=[u[0].__name__ for u in UNARY])
@pytest.mark.parametrize("n", [1, 7, 1000])
def test_out_gives_identical_values_and_returns_the_buffer(fn, tin, tout, make, n):
    x = make(random_twists(n))
    want = fn(x)
    out = np.full((n, *tout), np.nan)
    got = fn(x, out=out)
    assert got is out
    np.testing.assert_array_equal(out, want)  # bit-identical, not approximately
    # reuse: a second call overwrites every element
    out[...] = 123.0
    fn(x, out=out)
    np.testing.assert_array_equal(out, want)


def test_out_for_a_single_argument_and_a_nd_batch():
    xi = random_twists(12)
    out = np.empty((4, 4))
    assert se3.exp(xi[3], out=out) is out
    np.testing.assert_array_equal(out, se3.exp(xi[3]))
    x3 = xi.reshape(3, 4, 6)
    out3 = np.empty((3, 4, 4, 4))
    se3.exp(x3, out=out3)
    np.testing.assert_array_equal(out3, se3.exp(x3))
    v3 = np.empty((3, 4, 6))
    se3.log(out3, out=v3)
    np.testing.assert_array_equal(v3, se3.log(out3))


@pytest.mark.parametrize(
    "make_out,exc,msg",
    [
        (lambda n: np.empty((n + 1, 4, 4)), ValueError, r"exp: out has shape \(6, 4, 4\), expected \(5, 4, 4\)"),
        (lambda n: np.empty((n, 16)), ValueError, r"exp: out has shape \(5, 16\), expected \(5, 4, 4\)"),
        (lambda n: np.empty((4, 4)), ValueError, r"expected \(5, 4, 4\)"),
        (lambda n: np.empty((n, 4, 4), np.float32), TypeError, r"exp: out must have dtype float64.*float32"),
        (lambda n: np.empty((n, 4, 4), np.int64), TypeError, r"dtype float64"),
        (lambda n: np.empty((n, 4, 4), ">f8"), TypeError, r"native byte order"),
        (lambda n: np.empty((n, 4, 4)).tolist(), TypeError, r"exp: out must be a numpy.ndarray, got list"),
        (lambda n: np.empty((n, 4, 4), order="F"), ValueError, r"exp: out must be C-contiguous"),
        (lambda n: np.empty((2 * n, 4, 4))[::2], ValueError, r"C-contiguous"),
    ],
    ids=["rows", "flat", "single", "float32", "int64", "bigendian", "list", "fortran", "strided"],
)
def test_out_rejects_bad_buffers_with_a_clear_message(make_out, exc, msg):
    xi = random_twists(5)
    out = make_out(5)
    with pytest.raises(exc, match=msg):
        se3.exp(xi, out=out)


def test_out_rejects_read_only_and_leaves_rejected_buffers_untouched():
    T = se3.exp(random_twists(5))
    ro = np.zeros((5, 6))
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"log: out is read-only"):
        se3.log(T, out=ro)
    assert not ro.any()
    bad = np.zeros((5, 5))
    with pytest.raises(ValueError, match=r"log: out has shape \(5, 5\), expected \(5, 6\)"):
        se3.log(T, out=bad)
    assert not bad.any()


def test_out_is_keyword_only():
    xi = random_twists(3)
    with pytest.raises(TypeError):
        se3.exp(xi, np.empty((3, 4, 4)))


def test_out_aliasing_exact_is_in_place_partial_overlap_rejected():
    T = se3.exp(random_twists(50))
    want = se3.inverse(T)
    T2 = T.copy()
    assert se3.inverse(T2, out=T2) is T2  # element-for-element alias: in place
    np.testing.assert_array_equal(T2, want)
    buf = np.concatenate([T, T[:1]])  # out shifted by one element over the input
    with pytest.raises(ValueError, match=r"inverse: out overlaps argument 0"):
        se3.inverse(buf[1:], out=buf[:-1])
    xi_buf = np.zeros((10, 16))  # exp input (..., 6) inside the output's memory
    with pytest.raises(ValueError, match=r"exp: out overlaps argument 0"):
        se3.exp(xi_buf.reshape(-1)[:60].reshape(10, 6), out=xi_buf.reshape(10, 4, 4))


@pytest.mark.parametrize("fn,make", [(se3.exp, lambda xi: xi), (se3.log, lambda xi: se3.exp(xi))],
                         ids=["exp", "log"])
def test_threaded_split_is_bit_identical_to_single_thread(fn, make, threads_restored):
    x = make(random_twists(N_SPLIT, seed=11))
    se3.set_batch_threads(1)
    ref = fn(x)
    ref_out = np.empty_like(ref)
    fn(x, out=ref_out)
    np.testing.assert_array_equal(ref_out, ref)
    for k in (2, 3, 4, 7):  # more threads than cores is allowed and must not change any bit
        se3.set_batch_threads(k)
        np.testing.assert_array_equal(fn(x), ref)
        out = np.full_like(ref, np.nan)
        fn(x, out=out)
        np.testing.assert_array_equal(out, ref)
    se3.set_batch_threads(0)
    np.testing.assert_array_equal(fn(x), ref)
    # block edges (4096 elements per block) and the tail: each element equals its own single call
    for i in (0, 4095, 4096, 8191, N_SPLIT // 2, N_SPLIT - 1):
        np.testing.assert_array_equal(ref[i], fn(x[i]))


def test_set_batch_threads_validates_and_round_trips(threads_restored):
    se3.set_batch_threads(3)
    assert se3.get_batch_threads() == 3
    with pytest.raises(ValueError, match=r"set_batch_threads: n must be >= 0"):
        se3.set_batch_threads(-1)
    assert se3.get_batch_threads() == 3


def test_contiguous_float64_input_is_not_copied_and_other_inputs_are_converted():
    xi = random_twists(64)
    # in-place aliasing is only accepted when the kernel reads the caller's own buffer:
    # a copied input would not overlap `out` and the call would pass for the wrong reason, so
    # check the converse: partial overlap with the caller's buffer is detected (no hidden copy).
    T = se3.exp(xi)
    with pytest.raises(ValueError, match="overlaps"):
        se3.inverse(T[1:], out=np.ndarray((63, 4, 4), buffer=T, offset=0))
    # non-contiguous, float32 and list inputs are converted and give the same values
    want = se3.exp(xi)
    wide = np.zeros((64, 12))
    wide[:, ::2] = xi
    np.testing.assert_array_equal(se3.exp(wide[:, ::2]), want)
    np.testing.assert_array_equal(se3.exp(xi.astype(np.float32)), se3.exp(xi.astype(np.float32).astype(np.float64)))
    np.testing.assert_array_equal(se3.exp(xi.tolist()), want)
