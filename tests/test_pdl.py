"""bwlab.pdl without a GPU: the kernel arguments packed as the kernel receives them, the launch
configuration handed to cuLaunchKernelEx (the real cuda.bindings structures, the call itself replaced
by a recorder), and the clear refusal where the driver bindings lack what PDL needs."""
import ctypes
import types

import numpy as np
import pytest

from bwlab import pdl


class _Dev:
    """Stands for a device array: only .data.ptr is read."""
    def __init__(self, ptr):
        self.data = types.SimpleNamespace(ptr=ptr)


class _Fn:
    def __init__(self, ptr):
        self.ptr = ptr


def _read(address, sizes):
    ptrs = (ctypes.c_void_p * len(sizes)).from_address(address)
    return [ctypes.string_at(p, n) for p, n in zip(ptrs, sizes)]


def test_arguments_are_packed_as_the_kernel_receives_them():
    from bwlab.runtime import tensor_map_arg
    tmap = tensor_map_arg(bytes(range(128)))
    args = (tmap, _Dev(0x7F0000001000), np.int32(-3), np.uint64(2**40 + 5), np.uint32(7))
    ptrs, bufs = pdl.pack_args(args)
    got = _read(ctypes.addressof(ptrs), [128, 8, 4, 8, 4])
    assert got == [bytes(range(128)), (0x7F0000001000).to_bytes(8, "little"), (-3).to_bytes(4, "little", signed=True),
                   (2**40 + 5).to_bytes(8, "little"), (7).to_bytes(4, "little")]
    with pytest.raises(TypeError, match="kernel argument 0: int"):
        pdl.pack_args((5,))


def _recording_driver(calls):
    from cuda.bindings import driver as real
    fake = types.SimpleNamespace(**{n: getattr(real, n) for n in dir(real) if n.startswith("CU")})

    def launch(conf, f, params, extra):
        calls.append((conf, f, params, _read(params, [8, 4])))
        return (real.CUresult.CUDA_SUCCESS,)
    fake.cuLaunchKernelEx = launch
    fake.__name__ = "fake driver"
    return fake


@pytest.mark.parametrize("with_pdl", [True, False])
def test_the_launch_configuration(with_pdl):
    pytest.importorskip("cuda.bindings")
    calls = []
    drv = _recording_driver(calls)
    go = pdl.launcher(_Fn(0x1234), (128,), (256, 1, 1), (_Dev(0xABC000), np.int32(9)), shared_mem=197632,
                      stream=0, pdl=with_pdl, drv=drv)
    go()
    go()
    assert len(calls) == 2 and go.pdl is with_pdl
    conf, f, params, got = calls[0]
    assert int(f) == 0x1234 and got == [(0xABC000).to_bytes(8, "little"), (9).to_bytes(4, "little")]
    assert (conf.gridDimX, conf.gridDimY, conf.gridDimZ, conf.blockDimX, conf.sharedMemBytes) == (128, 1, 1, 256, 197632)
    if with_pdl:
        assert conf.numAttrs == 1
        attr = conf.attrs[0]
        assert attr.id == drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        assert attr.value.programmaticStreamSerializationAllowed == 1
    else:
        assert conf.numAttrs == 0


def test_a_failed_launch_says_so():
    pytest.importorskip("cuda.bindings")
    from cuda.bindings import driver as real
    drv = _recording_driver([])
    drv.cuLaunchKernelEx = lambda *a: (real.CUresult.CUDA_ERROR_INVALID_VALUE,)
    go = pdl.launcher(_Fn(1), (1,), (32,), (), stream=0, drv=drv)
    with pytest.raises(RuntimeError, match="cuLaunchKernelEx with programmatic stream serialization failed: .*INVALID_VALUE"):
        go()


def test_bindings_without_the_attribute_are_refused_clearly(monkeypatch):
    import cuda.bindings
    old = types.SimpleNamespace(__name__="cuda.bindings.driver (old)", CUfunction=int)
    monkeypatch.setattr(cuda.bindings, "driver", old, raising=False)
    import sys
    monkeypatch.setitem(sys.modules, "cuda.bindings.driver", old)
    with pytest.raises(pdl.PdlUnavailable, match="lacks cuLaunchKernelEx, CUlaunchConfig, CUlaunchAttribute"):
        pdl.driver()
