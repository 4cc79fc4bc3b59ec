"""A learner's kernel runs in a worker process: a hang, a fault or a dead worker comes back as an
exception within the limit, and the calling process is untouched (CPU stand-ins for the GPU failures;
the GPU gallery is `python -m bwlab.checks.broken`, docs/results)."""
import os
import time

import pytest

from bwlab.sandbox import KernelFault, KernelHang, run_isolated


def _square(x):
    return x * x


def _hang():
    while True:
        time.sleep(0.05)


class CUDARuntimeError(RuntimeError):  # the name CuPy's runtime errors carry
    pass


def _illegal_address():
    raise CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")


def _bad_input():
    raise ValueError("[box-inner-bytes] the inner box dimension must be a multiple of 16 bytes")


def _die():
    os._exit(9)


def test_result_comes_back():
    assert run_isolated(_square, 7) == 49


def test_hang_becomes_kernelhang_within_the_limit():
    t0 = time.perf_counter()
    with pytest.raises(KernelHang, match="spin loop") as e:
        run_isolated(_hang, kernel="spin_forever", limit=0.5)
    assert e.value.kernel == "spin_forever"
    assert time.perf_counter() - t0 < 30  # start-up of the worker + 0.5 s


def test_cuda_error_becomes_kernelfault():
    with pytest.raises(KernelFault, match="cudaErrorIllegalAddress") as e:
        run_isolated(_illegal_address, kernel="oob_store")
    assert "unaffected" in str(e.value)


def test_other_errors_keep_their_type():
    with pytest.raises(ValueError, match="box-inner-bytes"):
        run_isolated(_bad_input)


def test_dead_worker_is_a_fault():
    with pytest.raises(KernelFault, match="exit code 9"):
        run_isolated(_die, kernel="crash")
