"""Tier selection, the banner, and the foundation GPU checks (skipped without a GPU)."""
import time

import numpy as np
import pytest

from bwlab import device
from bwlab.device import GpuInfo


def fake(cc, name="GPU"):
    return GpuInfo(name=name, cc=cc, sm_count=1, smem_per_sm=0, smem_per_block_optin=0, l2_bytes=0,
                   global_mem_bytes=0, regs_per_sm=0)


@pytest.mark.parametrize("cc,expect", [
    ((10, 0), {"tma": "hardware", "multicast": "hardware", "store": "hardware", "umma": "hardware", "tmem": "hardware"}),
    ((9, 0), {"tma": "hardware", "multicast": "hardware", "store": "hardware", "umma": "hybrid", "tmem": "hybrid"}),
    ((12, 0), {"tma": "hardware", "multicast": "hardware", "store": "hardware", "umma": "hybrid", "tmem": "hybrid"}),
    # no GPU with TMA: the kernels run in the PTX emulator (sm_90a for the TMA stages, sm_100a for tcgen05)
    ((8, 9), {"tma": "emulated", "multicast": "emulated", "store": "emulated", "umma": "emulated", "tmem": "emulated"}),
    ((8, 0), {"tma": "emulated", "multicast": "emulated", "store": "emulated", "umma": "emulated", "tmem": "emulated"}),
    (None, {"tma": "emulated", "multicast": "emulated", "store": "emulated", "umma": "emulated", "tmem": "emulated"}),
])
def test_tier_table(monkeypatch, cc, expect):
    monkeypatch.setenv("BWLAB_BACKEND", "auto")
    monkeypatch.setattr(device, "_probe", lambda: None if cc is None else fake(cc))
    assert device.tiers() == expect


def test_backend_emulated_forces_the_emulator(monkeypatch):
    monkeypatch.setattr(device, "_probe", lambda: fake((9, 0), "NVIDIA H100"))
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    assert device.tiers() == {"tma": "emulated", "multicast": "emulated", "store": "emulated", "umma": "emulated",
                              "tmem": "emulated"}
    text = device.banner(print_it=False)
    assert "Emulated tier (BWLAB_BACKEND=emulated)" in text and "PTX emulator" in text


def test_backend_model_forces_model(monkeypatch):
    monkeypatch.setattr(device, "_probe", lambda: fake((10, 0)))
    monkeypatch.setenv("BWLAB_BACKEND", "model")
    assert set(device.tiers().values()) == {"model"}
    assert "BWLAB_BACKEND=model" in device.banner(print_it=False)
    monkeypatch.setenv("BWLAB_BACKEND", "hybrid")
    assert device.tier("umma") == "hybrid" and device.tier("tma") == "hardware"
    monkeypatch.setenv("BWLAB_BACKEND", "fast")
    with pytest.raises(ValueError, match="BWLAB_BACKEND"):
        device.tier("tma")


def test_banner_hopper(monkeypatch):
    monkeypatch.setenv("BWLAB_BACKEND", "auto")
    monkeypatch.setattr(device, "_probe", lambda: fake((9, 0), "NVIDIA H100 80GB HBM3"))
    text = device.banner(print_it=False)
    assert text == ("NVIDIA H100 80GB HBM3 (sm_90): TMA load, TMA multicast, TMA store on hardware; "
                    "UMMA (tcgen05.mma) and TMEM (tcgen05.ld/st) modelled (they need sm_100)")
    assert device.native_arch() == "sm_90a"


def test_require_names_the_rule(monkeypatch):
    monkeypatch.setenv("BWLAB_BACKEND", "auto")
    monkeypatch.setattr(device, "_probe", lambda: fake((9, 0), "NVIDIA H100"))
    with pytest.raises(device.UnsupportedGPU, match="sm_100"):
        device.require("umma")
    monkeypatch.setattr(device, "_probe", lambda: fake((8, 6), "RTX 3090"))
    with pytest.raises(device.UnsupportedGPU, match="sm_90"):
        device.require("tma")
    with pytest.raises(ValueError, match="unknown stage"):
        device.tier("gemm")


def test_launch_config_rules():
    from bwlab.runtime import LaunchConfigError, require_launch_config
    with pytest.raises(LaunchConfigError, match="1024"):
        require_launch_config((1,), (33, 32), 0, None)
    with pytest.raises(LaunchConfigError, match="portable maximum is 8"):
        require_launch_config((16,), (32,), 0, (16, 1, 1))
    with pytest.raises(LaunchConfigError, match="not a multiple"):
        require_launch_config((6,), (32,), 0, (4, 1, 1))


def test_hello_rejects_bad_size_before_the_driver():
    from bwlab.hello import hello_roundtrip
    with pytest.raises(ValueError, match="multiple of 16"):
        hello_roundtrip(100)


# ---- on a GPU -------------------------------------------------------------------------------------
@pytest.mark.sm90
@pytest.mark.parametrize("nbytes", [16, 4096, 16384])
def test_bulk_roundtrip_gpu(nbytes):
    from bwlab.hello import hello_roundtrip
    src, dst = hello_roundtrip(nbytes, blocks=3)
    np.testing.assert_array_equal(src, dst)


@pytest.mark.sm90
def test_wrong_expect_tx_raises_then_context_still_works():
    from bwlab.runtime import MbarrierTimeout
    from bwlab.hello import hello_roundtrip
    t0 = time.perf_counter()
    with pytest.raises(MbarrierTimeout) as e:
        hello_roundtrip(4096, blocks=2, extra_tx=16)
    assert time.perf_counter() - t0 < 1.0
    assert e.value.barrier == "smem_full" and e.value.expected_tx == 4112 and e.value.phase_parity == 0
    src, dst = hello_roundtrip(4096, blocks=2)
    np.testing.assert_array_equal(src, dst)


def test_tensor_map_arg_is_128_bytes():
    from bwlab.runtime import tensor_map_arg
    arg = tensor_map_arg(bytes(range(128)))
    assert arg.dtype.itemsize == 128 and arg.tobytes() == bytes(range(128))
    with pytest.raises(ValueError, match="128 bytes"):
        tensor_map_arg(bytes(64))


def test_percent_notebook_parser():
    from bwlab.tools.notebooks import parse_percent
    cells = parse_percent('# %% [markdown]\n# # Title\n# text\n\n# %% tags=["nbval-ignore-output"]\n'
                          'x = 1\n\n# %%\nprint(x)\n')
    assert cells == [("markdown", "# Title\ntext", []), ("code", "x = 1", ["nbval-ignore-output"]),
                     ("code", "print(x)", [])]


def test_data_path_names_every_instruction():
    from bwlab.datapath import HOPS
    text = " ".join(h.instruction for h in HOPS)
    for instr in ("cp.async.bulk.tensor", "tcgen05.mma", "tcgen05.ld", "st.shared", "fence.proxy.async"):
        assert instr in text


def test_run_cells_reports_each_cell(tmp_path):
    import io
    from bwlab.tools.notebooks import run_cells
    src = tmp_path / "nb.py"
    src.write_text("# %%\nx = 2\n\n# %%\nprint(x * 21)\n\n# %%\nraise RuntimeError('boom')\n\n"
                   "# %%\nimport IPython_not_a_module_here\n")
    out = io.StringIO()
    ok, failed, skipped = run_cells(src, out=out)
    assert (ok, failed, skipped) == (2, 2, 0)
    assert "42" in out.getvalue() and "boom" in out.getvalue()


def test_command_dispatch(capsys):
    """argparse subcommands: everything after the subcommand reaches the stage's parser untouched (order,
    `--`, `-h`, `--opt=value`), leading arguments first; a missing or unknown subcommand is a usage error."""
    from bwlab.validate import Subcommand, dispatch
    got = []
    import types, sys
    mod = types.ModuleType("bwlab_fake_cmd")
    mod.entry = lambda argv: got.append(argv) or 0
    sys.modules["bwlab_fake_cmd"] = mod
    cmds = {"x": Subcommand("bwlab_fake_cmd", "entry", "the fake command", ("sub",))}
    assert dispatch(cmds, ["x", "--n", "3"], "doc") == 0 and got == [["sub", "--n", "3"]]
    for rest in (["-h"], ["--help"], [], ["a", "--b", "c", "--", "-d", "--e=f"], ["--cases", "5", "pos"]):
        got.clear()
        assert dispatch(cmds, ["x", *rest], "doc") == 0 and got == [["sub", *rest]], rest
    assert dispatch(cmds, ["y"], "doc") == 2
    assert dispatch(cmds, [], "doc") == 2
    assert dispatch(cmds, ["--bogus", "x"], "doc") == 2
    capsys.readouterr()
    assert dispatch(cmds, ["--help"], "doc", prog="bwlab-fake") == 0
    shown = capsys.readouterr().out
    assert "usage: bwlab-fake" in shown and "the fake command" in shown


def test_every_subcommand_names_a_function():
    import importlib
    from bwlab import bench, validate
    for table in (validate.COMMANDS, bench.COMMANDS):
        for name, cmd in table.items():
            assert callable(getattr(importlib.import_module(cmd.module), cmd.function)), name
            assert cmd.help, name


def test_tiers_for_no_gpu_is_the_emulated_tier():
    """The one tier story: without a GPU with TMA the kernels run in the emulator (what the banner says
    and what 0.1 asks); the model tier is only BWLAB_BACKEND=model."""
    assert set(device.tiers_for(None).values()) == {"emulated"}
    assert set(device.tiers_for((8, 6)).values()) == {"emulated"}
    assert {t for _, _, row in device.tier_table() for t in row.values()} <= {"hardware", "hybrid", "emulated"}


@pytest.mark.parametrize("backend,cc,words", [
    ("auto", None, "PTX emulator runs the kernel's own sm_100a PTX"),
    ("auto", (9, 0), "NumPy model executes tcgen05.mma"),
    ("auto", (10, 0), "this GPU (B200, sm_100) runs the kernel"),
    ("model", (10, 0), "BWLAB_BACKEND=model"),
])
def test_where_says_what_runs_a_stage(monkeypatch, backend, cc, words):
    monkeypatch.setenv("BWLAB_BACKEND", backend)
    monkeypatch.setattr(device, "_probe", lambda: None if cc is None else fake(cc, "B200"))
    line = device.where("umma")
    assert line.startswith("UMMA (tcgen05.mma) — ") and words in line
    assert device.where().count("\n") == len(device.STAGES) - 1


@pytest.mark.parametrize("backend,cc,on", [
    ("auto", None, {"tma": False, "umma": False}),          # the emulator
    ("auto", (9, 0), {"tma": True, "umma": True}),          # an H100: TMA on the GPU, tcgen05 hybrid
    ("auto", (10, 0), {"tma": True, "umma": True}),         # a B200: everything on the GPU
    ("model", (10, 0), {"tma": False, "umma": False}),      # BWLAB_BACKEND=model: nothing runs
    ("emulated", (9, 0), {"tma": False, "umma": False}),    # a GPU, but the emulator asked for
])
def test_on_gpu_is_the_hardware_and_hybrid_tiers(monkeypatch, backend, cc, on):
    """What a notebook asks instead of comparing tier names (tests/test_interface.py keeps them out)."""
    monkeypatch.setenv("BWLAB_BACKEND", backend)
    monkeypatch.setattr(device, "_probe", lambda: None if cc is None else fake(cc, "B200"))
    for stage, want in on.items():
        assert device.on_gpu(stage) is want, (stage, device.tier(stage))
        assert want == (device.tier(stage) in ("hardware", "hybrid"))
