"""The tcgen05.ld/st thread maps of bwlab.tmem, checked against two independent readings:

1. CuTe's own copy traits (NVIDIA/cutlass include/cute/atom/copy_traits_sm100.hpp, the
   `Copy_Traits<SM100_TMEM_LOAD_<dp>dp<bits>b<num>x[_16b]>` specialisations), transcribed below as
   data and evaluated by a small CuTe-layout evaluator written here: DstLayout maps (thread, value bit)
   to a logical bit id, ValID maps that id to a TMEM bit address (datapath lane * DP_b + bit). The
   PTX string, register count and .16x32bx2 immediate come from include/cute/arch/copy_sm100.hpp.
   The store traits reuse the same layouts with source and destination swapped.
2. The PTX ISA's own text where it pins a fragment down: the mma.m16n8 accumulator fragment and
   the mma.m16n8k8 .tf32 A fragment (9.7.14.5, "groupID = %laneid >> 2, threadID_in_group =
   %laneid % 4") coincide with .16x256b.x1 and .16x128b.x2; .32x32b is "thread t reads lane t".
Every map must also be a bijection onto exactly the (lane, column) cells the instruction touches.
"""
import numpy as np
import pytest

from bwlab import tmem
from bwlab.tmem import TmemAccess, ld_fragment_map

DP_B = 1 << 21  # cute::TMEM::DP_b: the datapath (lane) stride in TMEM bit addresses

# (shape, num, pack16, registers, CuTe's PTX string, .16x32bx2 immediate, ValID, DstLayout),
# every layout as (shape, stride) in CuTe's nesting; 'DP' stands for TMEM::DP_b.
CUTLASS_LOAD_TRAITS = [
    ('32x32b', 1, False, 1, 'tcgen05.ld.sync.aligned.32x32b.x1.b32', None, ((32, 32), (1, 'DP')), ((32, 32), (32, 1))),
    ('32x32b', 2, False, 2, 'tcgen05.ld.sync.aligned.32x32b.x2.b32', None, ((64, 32), (1, 'DP')), ((32, 64), (64, 1))),
    ('32x32b', 4, False, 4, 'tcgen05.ld.sync.aligned.32x32b.x4.b32', None, ((128, 32), (1, 'DP')), ((32, 128), (128, 1))),
    ('32x32b', 8, False, 8, 'tcgen05.ld.sync.aligned.32x32b.x8.b32', None, ((256, 32), (1, 'DP')), ((32, 256), (256, 1))),
    ('32x32b', 16, False, 16, 'tcgen05.ld.sync.aligned.32x32b.x16.b32', None, ((512, 32), (1, 'DP')), ((32, 512), (512, 1))),
    ('32x32b', 32, False, 32, 'tcgen05.ld.sync.aligned.32x32b.x32.b32', None, ((1024, 32), (1, 'DP')), ((32, 1024), (1024, 1))),
    ('32x32b', 64, False, 64, 'tcgen05.ld.sync.aligned.32x32b.x64.b32', None, ((2048, 32), (1, 'DP')), ((32, 2048), (2048, 1))),
    ('32x32b', 128, False, 128, 'tcgen05.ld.sync.aligned.32x32b.x128.b32', None, ((4096, 32), (1, 'DP')), ((32, 4096), (4096, 1))),
    ('32x32b', 1, True, 1, 'tcgen05.ld.sync.aligned.32x32b.x1.pack::16b.b32', None, (((16, 2), 32), ((1, 32), 'DP')), ((32, 32), (32, 1))),
    ('32x32b', 2, True, 2, 'tcgen05.ld.sync.aligned.32x32b.x2.pack::16b.b32', None, (((16, 4), 32), ((1, 32), 'DP')), ((32, 64), (64, 1))),
    ('32x32b', 4, True, 4, 'tcgen05.ld.sync.aligned.32x32b.x4.pack::16b.b32', None, (((16, 8), 32), ((1, 32), 'DP')), ((32, 128), (128, 1))),
    ('32x32b', 8, True, 8, 'tcgen05.ld.sync.aligned.32x32b.x8.pack::16b.b32', None, (((16, 16), 32), ((1, 32), 'DP')), ((32, 256), (256, 1))),
    ('32x32b', 16, True, 16, 'tcgen05.ld.sync.aligned.32x32b.x16.pack::16b.b32', None, (((16, 32), 32), ((1, 32), 'DP')), ((32, 512), (512, 1))),
    ('32x32b', 32, True, 32, 'tcgen05.ld.sync.aligned.32x32b.x32.pack::16b.b32', None, (((16, 64), 32), ((1, 32), 'DP')), ((32, 1024), (1024, 1))),
    ('32x32b', 64, True, 64, 'tcgen05.ld.sync.aligned.32x32b.x64.pack::16b.b32', None, (((16, 128), 32), ((1, 32), 'DP')), ((32, 2048), (2048, 1))),
    ('32x32b', 128, True, 128, 'tcgen05.ld.sync.aligned.32x32b.x128.pack::16b.b32', None, (((16, 256), 32), ((1, 32), 'DP')), ((32, 4096), (4096, 1))),
    ('16x64b', 1, False, 1, 'tcgen05.ld.sync.aligned.16x64b.x1.b32', None, ((64, 16), (1, 'DP')), (((2, 2, 8), 32), ((512, 32, 64), 1))),
    ('16x64b', 2, False, 2, 'tcgen05.ld.sync.aligned.16x64b.x2.b32', None, ((128, 16), (1, 'DP')), (((2, 2, 8), (32, 2)), ((1024, 32, 128), (1, 64)))),
    ('16x64b', 4, False, 4, 'tcgen05.ld.sync.aligned.16x64b.x4.b32', None, ((256, 16), (1, 'DP')), (((2, 2, 8), (32, 4)), ((2048, 32, 256), (1, 64)))),
    ('16x64b', 8, False, 8, 'tcgen05.ld.sync.aligned.16x64b.x8.b32', None, ((512, 16), (1, 'DP')), (((2, 2, 8), (32, 8)), ((4096, 32, 512), (1, 64)))),
    ('16x64b', 16, False, 16, 'tcgen05.ld.sync.aligned.16x64b.x16.b32', None, ((1024, 16), (1, 'DP')), (((2, 2, 8), (32, 16)), ((8192, 32, 1024), (1, 64)))),
    ('16x64b', 32, False, 32, 'tcgen05.ld.sync.aligned.16x64b.x32.b32', None, ((2048, 16), (1, 'DP')), (((2, 2, 8), (32, 32)), ((16384, 32, 2048), (1, 64)))),
    ('16x64b', 64, False, 64, 'tcgen05.ld.sync.aligned.16x64b.x64.b32', None, ((4096, 16), (1, 'DP')), (((2, 2, 8), (32, 64)), ((32768, 32, 4096), (1, 64)))),
    ('16x64b', 128, False, 128, 'tcgen05.ld.sync.aligned.16x64b.x128.b32', None, ((8192, 16), (1, 'DP')), (((2, 2, 8), (32, 128)), ((65536, 32, 8192), (1, 64)))),
    ('16x64b', 1, True, 1, 'tcgen05.ld.sync.aligned.16x64b.x1.pack::16b.b32', None, (((16, 4), 16), ((1, 32), 'DP')), (((2, 2, 8), 32), ((512, 32, 64), 1))),
    ('16x64b', 2, True, 2, 'tcgen05.ld.sync.aligned.16x64b.x2.pack::16b.b32', None, (((16, 8), 16), ((1, 32), 'DP')), (((2, 2, 8), (32, 2)), ((1024, 32, 128), (1, 64)))),
    ('16x64b', 4, True, 4, 'tcgen05.ld.sync.aligned.16x64b.x4.pack::16b.b32', None, (((16, 16), 16), ((1, 32), 'DP')), (((2, 2, 8), (32, 4)), ((2048, 32, 256), (1, 64)))),
    ('16x64b', 8, True, 8, 'tcgen05.ld.sync.aligned.16x64b.x8.pack::16b.b32', None, (((16, 32), 16), ((1, 32), 'DP')), (((2, 2, 8), (32, 8)), ((4096, 32, 512), (1, 64)))),
    ('16x64b', 16, True, 16, 'tcgen05.ld.sync.aligned.16x64b.x16.pack::16b.b32', None, (((16, 64), 16), ((1, 32), 'DP')), (((2, 2, 8), (32, 16)), ((8192, 32, 1024), (1, 64)))),
    ('16x64b', 32, True, 32, 'tcgen05.ld.sync.aligned.16x64b.x32.pack::16b.b32', None, (((16, 128), 16), ((1, 32), 'DP')), (((2, 2, 8), (32, 32)), ((16384, 32, 2048), (1, 64)))),
    ('16x64b', 64, True, 64, 'tcgen05.ld.sync.aligned.16x64b.x64.pack::16b.b32', None, (((16, 256), 16), ((1, 32), 'DP')), (((2, 2, 8), (32, 64)), ((32768, 32, 4096), (1, 64)))),
    ('16x64b', 128, True, 128, 'tcgen05.ld.sync.aligned.16x64b.x128.pack::16b.b32', None, (((16, 512), 16), ((1, 32), 'DP')), (((2, 2, 8), (32, 128)), ((65536, 32, 8192), (1, 64)))),
    ('16x128b', 1, False, 2, 'tcgen05.ld.sync.aligned.16x128b.x1.b32', None, ((128, 16), (1, 'DP')), (((4, 8), (32, 2)), ((32, 128), (1, 1024)))),
    ('16x128b', 2, False, 4, 'tcgen05.ld.sync.aligned.16x128b.x2.b32', None, ((256, 16), (1, 'DP')), (((4, 8), (32, 2, 2)), ((32, 256), (1, 2048, 128)))),
    ('16x128b', 4, False, 8, 'tcgen05.ld.sync.aligned.16x128b.x4.b32', None, ((512, 16), (1, 'DP')), (((4, 8), (32, 2, 4)), ((32, 512), (1, 4096, 128)))),
    ('16x128b', 8, False, 16, 'tcgen05.ld.sync.aligned.16x128b.x8.b32', None, ((1024, 16), (1, 'DP')), (((4, 8), (32, 2, 8)), ((32, 1024), (1, 8192, 128)))),
    ('16x128b', 16, False, 32, 'tcgen05.ld.sync.aligned.16x128b.x16.b32', None, ((2048, 16), (1, 'DP')), (((4, 8), (32, 2, 16)), ((32, 2048), (1, 16384, 128)))),
    ('16x128b', 32, False, 64, 'tcgen05.ld.sync.aligned.16x128b.x32.b32', None, ((4096, 16), (1, 'DP')), (((4, 8), (32, 2, 32)), ((32, 4096), (1, 32768, 128)))),
    ('16x128b', 64, False, 128, 'tcgen05.ld.sync.aligned.16x128b.x64.b32', None, ((8192, 16), (1, 'DP')), (((4, 8), (32, 2, 64)), ((32, 8192), (1, 65536, 128)))),
    ('16x128b', 1, True, 2, 'tcgen05.ld.sync.aligned.16x128b.x1.pack::16b.b32', None, (((16, 8), 16), ((1, 32), 'DP')), (((4, 8), (32, 2)), ((32, 128), (1, 1024)))),
    ('16x128b', 2, True, 4, 'tcgen05.ld.sync.aligned.16x128b.x2.pack::16b.b32', None, (((16, 16), 16), ((1, 32), 'DP')), (((4, 8), (32, 2, 2)), ((32, 256), (1, 2048, 128)))),
    ('16x128b', 4, True, 8, 'tcgen05.ld.sync.aligned.16x128b.x4.pack::16b.b32', None, (((16, 32), 16), ((1, 32), 'DP')), (((4, 8), (32, 2, 4)), ((32, 512), (1, 4096, 128)))),
    ('16x128b', 8, True, 16, 'tcgen05.ld.sync.aligned.16x128b.x8.pack::16b.b32', None, (((16, 64), 16), ((1, 32), 'DP')), (((4, 8), (32, 2, 8)), ((32, 1024), (1, 8192, 128)))),
    ('16x128b', 16, True, 32, 'tcgen05.ld.sync.aligned.16x128b.x16.pack::16b.b32', None, (((16, 128), 16), ((1, 32), 'DP')), (((4, 8), (32, 2, 16)), ((32, 2048), (1, 16384, 128)))),
    ('16x128b', 32, True, 64, 'tcgen05.ld.sync.aligned.16x128b.x32.pack::16b.b32', None, (((16, 256), 16), ((1, 32), 'DP')), (((4, 8), (32, 2, 32)), ((32, 4096), (1, 32768, 128)))),
    ('16x128b', 64, True, 128, 'tcgen05.ld.sync.aligned.16x128b.x64.pack::16b.b32', None, (((16, 512), 16), ((1, 32), 'DP')), (((4, 8), (32, 2, 64)), ((32, 8192), (1, 65536, 128)))),
    ('16x256b', 1, False, 4, 'tcgen05.ld.sync.aligned.16x256b.x1.b32', None, ((256, 16), (1, 'DP')), (((4, 8), (64, 2)), ((64, 256), (1, 2048)))),
    ('16x256b', 2, False, 8, 'tcgen05.ld.sync.aligned.16x256b.x2.b32', None, ((512, 16), (1, 'DP')), (((4, 8), (64, 2, 2)), ((64, 512), (1, 4096, 256)))),
    ('16x256b', 4, False, 16, 'tcgen05.ld.sync.aligned.16x256b.x4.b32', None, ((1024, 16), (1, 'DP')), (((4, 8), (64, 2, 4)), ((64, 1024), (1, 8192, 256)))),
    ('16x256b', 8, False, 32, 'tcgen05.ld.sync.aligned.16x256b.x8.b32', None, ((2048, 16), (1, 'DP')), (((4, 8), (64, 2, 8)), ((64, 2048), (1, 16384, 256)))),
    ('16x256b', 16, False, 64, 'tcgen05.ld.sync.aligned.16x256b.x16.b32', None, ((4096, 16), (1, 'DP')), (((4, 8), (64, 2, 16)), ((64, 4096), (1, 32768, 256)))),
    ('16x256b', 32, False, 128, 'tcgen05.ld.sync.aligned.16x256b.x32.b32', None, ((8192, 16), (1, 'DP')), (((4, 8), (64, 2, 32)), ((64, 8192), (1, 65536, 256)))),
    ('16x256b', 1, True, 4, 'tcgen05.ld.sync.aligned.16x256b.x1.pack::16b.b32', None, (((16, 16), 16), ((1, 32), 'DP')), (((4, 8), (64, 2)), ((64, 256), (1, 2048)))),
    ('16x256b', 2, True, 8, 'tcgen05.ld.sync.aligned.16x256b.x2.pack::16b.b32', None, (((16, 32), 16), ((1, 32), 'DP')), (((4, 8), (64, 2, 2)), ((64, 512), (1, 4096, 256)))),
    ('16x256b', 4, True, 16, 'tcgen05.ld.sync.aligned.16x256b.x4.pack::16b.b32', None, (((16, 64), 16), ((1, 32), 'DP')), (((4, 8), (64, 2, 4)), ((64, 1024), (1, 8192, 256)))),
    ('16x256b', 8, True, 32, 'tcgen05.ld.sync.aligned.16x256b.x8.pack::16b.b32', None, (((16, 128), 16), ((1, 32), 'DP')), (((4, 8), (64, 2, 8)), ((64, 2048), (1, 16384, 256)))),
    ('16x256b', 16, True, 64, 'tcgen05.ld.sync.aligned.16x256b.x16.pack::16b.b32', None, (((16, 256), 16), ((1, 32), 'DP')), (((4, 8), (64, 2, 16)), ((64, 4096), (1, 32768, 256)))),
    ('16x256b', 32, True, 128, 'tcgen05.ld.sync.aligned.16x256b.x32.pack::16b.b32', None, (((16, 512), 16), ((1, 32), 'DP')), (((4, 8), (64, 2, 32)), ((64, 8192), (1, 65536, 256)))),
    ('16x32bx2', 1, False, 1, 'tcgen05.ld.sync.aligned.16x32bx2.x1.b32', 1, ((64, 16), (1, 'DP')), (((16, 2), 32), ((64, 32), 1))),
    ('16x32bx2', 2, False, 2, 'tcgen05.ld.sync.aligned.16x32bx2.x2.b32', 2, ((128, 16), (1, 'DP')), (((16, 2), 64), ((128, 64), 1))),
    ('16x32bx2', 4, False, 4, 'tcgen05.ld.sync.aligned.16x32bx2.x4.b32', 4, ((256, 16), (1, 'DP')), (((16, 2), 128), ((256, 128), 1))),
    ('16x32bx2', 8, False, 8, 'tcgen05.ld.sync.aligned.16x32bx2.x8.b32', 8, ((512, 16), (1, 'DP')), (((16, 2), 256), ((512, 256), 1))),
    ('16x32bx2', 16, False, 16, 'tcgen05.ld.sync.aligned.16x32bx2.x16.b32', 16, ((1024, 16), (1, 'DP')), (((16, 2), 512), ((1024, 512), 1))),
    ('16x32bx2', 32, False, 32, 'tcgen05.ld.sync.aligned.16x32bx2.x32.b32', 32, ((2048, 16), (1, 'DP')), (((16, 2), 1024), ((2048, 1024), 1))),
    ('16x32bx2', 64, False, 64, 'tcgen05.ld.sync.aligned.16x32bx2.x64.b32', 64, ((4096, 16), (1, 'DP')), (((16, 2), 2048), ((4096, 2048), 1))),
    ('16x32bx2', 128, False, 128, 'tcgen05.ld.sync.aligned.16x32bx2.x128.b32', 128, ((8192, 16), (1, 'DP')), (((16, 2), 4096), ((8192, 4096), 1))),
    ('16x32bx2', 1, True, 1, 'tcgen05.ld.sync.aligned.16x32bx2.x1.pack::16b.b32', 2, (((16, 4), 16), ((1, 32), 'DP')), (((16, 2), 32), ((64, 32), 1))),
    ('16x32bx2', 2, True, 2, 'tcgen05.ld.sync.aligned.16x32bx2.x2.pack::16b.b32', 4, (((16, 8), 16), ((1, 32), 'DP')), (((16, 2), 64), ((128, 64), 1))),
    ('16x32bx2', 4, True, 4, 'tcgen05.ld.sync.aligned.16x32bx2.x4.pack::16b.b32', 8, (((16, 16), 16), ((1, 32), 'DP')), (((16, 2), 128), ((256, 128), 1))),
    ('16x32bx2', 8, True, 8, 'tcgen05.ld.sync.aligned.16x32bx2.x8.pack::16b.b32', 16, (((16, 32), 16), ((1, 32), 'DP')), (((16, 2), 256), ((512, 256), 1))),
    ('16x32bx2', 16, True, 16, 'tcgen05.ld.sync.aligned.16x32bx2.x16.pack::16b.b32', 32, (((16, 64), 16), ((1, 32), 'DP')), (((16, 2), 512), ((1024, 512), 1))),
    ('16x32bx2', 32, True, 32, 'tcgen05.ld.sync.aligned.16x32bx2.x32.pack::16b.b32', 64, (((16, 128), 16), ((1, 32), 'DP')), (((16, 2), 1024), ((2048, 1024), 1))),
    ('16x32bx2', 64, True, 64, 'tcgen05.ld.sync.aligned.16x32bx2.x64.pack::16b.b32', 128, (((16, 256), 16), ((1, 32), 'DP')), (((16, 2), 2048), ((4096, 2048), 1))),
    ('16x32bx2', 128, True, 128, 'tcgen05.ld.sync.aligned.16x32bx2.x128.pack::16b.b32', 256, (((16, 512), 16), ((1, 32), 'DP')), (((16, 2), 4096), ((8192, 4096), 1))),
]


# ---- a CuTe layout evaluator (colexicographic, hierarchical), vectorised over index arrays ----

def _size(shape):
    return int(np.prod([_size(s) for s in shape])) if isinstance(shape, tuple) else int(shape)


def _eval(shape, stride, idx):
    """Offset of 1-D coordinate(s) `idx` in the layout shape:stride."""
    if not isinstance(shape, tuple):
        d = DP_B if stride == "DP" else int(stride)
        return idx * d
    off = np.zeros_like(idx)
    for s, d in zip(shape, stride):
        n = _size(s)
        off = off + _eval(s, d, idx % n)
        idx = idx // n
    return off


def cutlass_cells(row):
    """(lane, column[, half]) per (thread, register) from CuTe's DstLayout and ValID, checking on
    the way that every 32-bit register (or 16-bit half) lands on whole, aligned bits of one cell."""
    shape, num, pack, nregs, _, _, valid, dst = row
    (thr_shape, val_shape), (thr_stride, val_stride) = dst
    assert _size(thr_shape) == 32
    assert _size(val_shape) == 32 * nregs, "DstLayout covers every bit of every register"
    t = np.arange(32)[:, None, None]
    j = np.arange(nregs)[None, :, None]
    b = np.arange(32)[None, None, :]
    logical = _eval(thr_shape, thr_stride, t) + _eval(val_shape, val_stride, 32 * j + b)
    addr = _eval(valid[0], valid[1], logical)
    lane, bit = addr // DP_B, addr % DP_B
    col, pos = bit // 32, bit % 32
    if not pack:
        assert (pos == b).all(), "register bit k is bit k of its cell"
        assert (col == col[..., :1]).all() and (lane == lane[..., :1]).all()
        return np.stack([lane[..., 0], col[..., 0]], axis=-1)
    # pack::16b: bits 16h..16h+15 of a register are bits 0..15 of one cell
    out = []
    for h in (0, 1):
        sl = slice(16 * h, 16 * h + 16)
        assert (pos[..., sl] == np.arange(16)).all(), "a packed half is the low 16 bits of a cell"
        assert (col[..., sl] == col[..., sl][..., :1]).all()
        out.append(np.stack([lane[..., 16 * h], col[..., 16 * h]], axis=-1))
    return np.stack(out, axis=2)


IDS = [f"{r[0]}.x{r[1]}{'.pack' if r[2] else ''}" for r in CUTLASS_LOAD_TRAITS]


def test_transcription_covers_every_form():
    # CuTe has a trait for every (shape, num, pack) that PTX allows, and bwlab accepts the same set.
    got = {(r[0], r[1], r[2]) for r in CUTLASS_LOAD_TRAITS}
    ours = {(a.shape, a.num, a.pack16) for a in tmem.all_accesses()}
    assert got == ours and len(ours) == 74


@pytest.mark.parametrize("row", CUTLASS_LOAD_TRAITS, ids=IDS)
def test_map_matches_cutlass_traits(row):
    shape, num, pack, nregs, ptx, imm, _, _ = row
    acc = TmemAccess(shape, num, pack)
    assert acc.registers == nregs
    assert acc.ptx("ld") == ptx
    assert acc.half_split_off == imm  # None except for .16x32bx2, where CuTe passes the half width
    np.testing.assert_array_equal(ld_fragment_map(shape, num, pack), cutlass_cells(row))


def test_evaluator_knows_a_hand_computed_cell():
    # Guard the evaluator itself with a value worked out by hand from the 16dp256b1x traits:
    # thread 5 = (1, 1) in (4, 8) -> bit 64*1 + 256*1; value bit 32*3 = (32, 1) in (64, 2) ->
    # +32 +2048: logical bit 2400 = lane 2400 // 256 = 9, bit 96 -> column 3.
    row = next(r for r in CUTLASS_LOAD_TRAITS if r[:3] == ("16x256b", 1, False))
    assert tuple(cutlass_cells(row)[5, 3]) == (9, 3)


# ---- the PTX ISA's text ------------------------------------------------------------------------

def test_32x32b_thread_t_reads_lane_t():
    for num in tmem.NUMS:
        m = ld_fragment_map("32x32b", num)
        assert (m[:, :, 0] == np.arange(32)[:, None]).all()
        assert (m[:, :, 1] == np.arange(num)[None, :]).all()


def test_16x256b_x1_is_the_mma_m16n8_accumulator_fragment():
    # PTX ISA 9.7.14.5 (mma.m16n8k16, f32 C/D): c_i at row groupID (+8 for i >= 2),
    # column threadID_in_group * 2 + (i & 1).
    m = ld_fragment_map("16x256b", 1)
    for lane_id in range(32):
        group, tig = lane_id >> 2, lane_id % 4
        for i in range(4):
            assert tuple(m[lane_id, i]) == (group + 8 * (i >= 2), tig * 2 + (i & 1))


def test_16x128b_x2_is_the_mma_m16n8k8_tf32_a_fragment():
    # PTX ISA 9.7.14.5 (mma.m16n8k8, .tf32 A): row groupID for a0, a2 and groupID + 8 for a1, a3;
    # column threadID_in_group for a0, a1 and threadID_in_group + 4 for a2, a3.
    m = ld_fragment_map("16x128b", 2)
    for lane_id in range(32):
        group, tig = lane_id >> 2, lane_id % 4
        for i in range(4):
            assert tuple(m[lane_id, i]) == (group + 8 * (i in (1, 3)), tig + 4 * (i >= 2))


def test_16x32bx2_halves_sit_at_the_immediate_offset():
    m = ld_fragment_map("16x32bx2", 4, half_split_off=100)
    assert (m[:16, :, 1] == np.arange(4)).all() and (m[16:, :, 1] == 100 + np.arange(4)).all()
    assert (m[:, :, 0] == np.arange(32)[:, None] % 16).all()


# ---- bijections -------------------------------------------------------------------------------

def expected_cells(acc):
    if acc.shape == "16x32bx2":
        cols = set(range(acc.half_width)) | set(range(acc.half_split_off,
                                                     acc.half_split_off + acc.half_width))
    else:
        cols = set(range(acc.width))
    return {(l, c) for l in range(acc.lanes) for c in cols}


@pytest.mark.parametrize("acc", tmem.all_accesses(), ids=lambda a: a.label())
def test_every_map_is_a_bijection_onto_the_touched_cells(acc):
    m = acc.map().reshape(-1, 2)
    cells = [tuple(x) for x in m]
    assert len(cells) == len(set(cells)), "two registers would hold the same cell"
    assert set(cells) == expected_cells(acc)
    # 32-bit cells moved per warp = bits moved / 32, as the shape name says
    bits = {"32x32b": 32 * 32, "16x64b": 16 * 64, "16x128b": 16 * 128, "16x256b": 16 * 256,
            "16x32bx2": 2 * 16 * 32}[acc.shape] * acc.num
    assert len(cells) == bits // 32 * (2 if acc.pack16 else 1)


@pytest.mark.parametrize("off", [0, 3, 8, 40])
def test_16x32bx2_with_any_offset(off):
    acc = TmemAccess("16x32bx2", 8, half_split_off=off)
    cells = {tuple(x) for x in acc.map().reshape(-1, 2)}
    assert cells == expected_cells(acc)
    assert acc.halves_overlap == (off < 8)
