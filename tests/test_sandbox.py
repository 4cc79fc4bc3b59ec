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
        run_isolated(_hang, name="spin_forever", limit=0.5)
    assert e.value.kernel == "spin_forever"
    assert time.perf_counter() - t0 < 30  # start-up of the worker + 0.5 s


def test_cuda_error_becomes_kernelfault():
    with pytest.raises(KernelFault, match="cudaErrorIllegalAddress") as e:
        run_isolated(_illegal_address, name="oob_store")
    assert "unaffected" in str(e.value)


def test_other_errors_keep_their_type():
    with pytest.raises(ValueError, match="box-inner-bytes"):
        run_isolated(_bad_input)


def test_dead_worker_is_a_fault():
    with pytest.raises(KernelFault, match="exit code 9"):
        run_isolated(_die, name="crash")


class _Timeout(RuntimeError):
    def __init__(self, kernel, barrier, expected_tx):
        self.kernel, self.barrier, self.expected_tx = kernel, barrier, expected_tx
        super().__init__(f"{kernel}: mbarrier '{barrier}' did not complete ({expected_tx} bytes)")


def _bounded_timeout():
    raise _Timeout("teach_tma_load", "smem_full", 1040)


def test_exception_attributes_survive_the_worker():
    with pytest.raises(_Timeout, match="smem_full") as e:
        run_isolated(_bounded_timeout)
    assert (e.value.barrier, e.value.expected_tx) == ("smem_full", 1040)


def test_edited_teaching_kernels_go_to_a_worker(monkeypatch):
    from bwlab import lab, sandbox
    k = lab.TeachingKernel("hello_bulk.cu")
    assert not lab.isolate(k)                       # the original runs in the notebook's process
    mine = k.replace("mbarrier_init(&smem_full, 1)", "mbarrier_init(&smem_full, 1 )")
    assert lab.isolate(mine)                        # a learner's edit goes to a worker ...
    monkeypatch.setenv(sandbox.WORKER_ENV, "1")
    assert not lab.isolate(mine)                    # ... where it then runs directly
