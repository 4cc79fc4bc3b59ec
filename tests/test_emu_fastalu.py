"""The register-direct integer bodies (bwlab.emu.isa.fastalu) write the same register bits as the chapters' bodies."""
import numpy as np
import pytest

from bwlab import emu
from bwlab.emu.isa import lookup
from bwlab.emu.isa.fastalu import fast_body
from bwlab.emu.isa.operands import ALL, mods_of
from bwlab.emu.program import _Ctx

FAST = """
    mov.u32 %r1, %r2;            mov.b32 %r3, 7;              mov.f32 %f1, 0f3F800000;     mov.f32 %f2, %f3;
    mov.u64 %rd1, %rd2;          mov.s64 %rd3, -5;            mov.b64 %rd4, 0x8000000000000001;
    add.s32 %r4, %r5, %r6;       add.u32 %r4, %r5, -3;        sub.s32 %r4, %r5, %r6;       sub.u32 %r4, %r5, 9;
    add.s64 %rd5, %rd6, %rd7;    add.u64 %rd5, %rd6, 4096;    sub.s64 %rd5, %rd6, %rd7;    sub.u64 %rd5, %rd6, -1;
    and.b32 %r4, %r5, %r6;       or.b32 %r4, %r5, 255;        xor.b32 %r4, %r5, -1;
    and.b64 %rd5, %rd6, %rd7;    or.b64 %rd5, %rd6, 1;        xor.b64 %rd5, %rd6, %rd7;
    shl.b32 %r4, %r5, 3;         shl.b32 %r4, %r5, 31;        shl.b64 %rd5, %rd6, 40;
    shr.u32 %r4, %r5, 7;         shr.b32 %r4, %r5, 0;         shr.u64 %rd5, %rd6, 63;      shr.b64 %rd5, %rd6, 17;
    cvt.u64.u32 %rd5, %r5;       cvt.u32.u64 %r4, %rd6;       cvt.s64.s32 %rd5, %r5;
    setp.eq.s32 %p1, %r5, %r6;   setp.ne.b32 %p1, %r5, 0;     setp.lt.s32 %p1, %r5, %r6;   setp.ge.s32 %p1, %r5, -2;
    setp.gt.u32 %p1, %r5, %r6;   setp.le.u32 %p1, %r5, 100;   setp.lo.u32 %p1, %r5, %r6;   setp.hs.u32 %p1, %r5, %r6;
    setp.lt.s64 %p1, %rd6, %rd7; setp.gt.u64 %p1, %rd6, 5;    setp.ne.s64 %p1, %rd6, %rd7; setp.le.s64 %p1, %rd6, -9;
    mul.lo.s32 %r4, %r5, %r6;    mul.lo.u32 %r4, %r5, 77;     mad.lo.s32 %r4, %r5, %r6, %r7; mad.lo.u32 %r4, %r5, -3, %r6;
    mul.wide.s32 %rd5, %r5, %r6; mul.wide.s32 %rd5, %r5, -4;  mul.wide.u32 %rd5, %r5, %r6; mad.wide.s32 %rd5, %r5, %r6, %rd7;
    mad.wide.u32 %rd5, %r5, 12, %rd7;
    selp.u32 %r4, %r5, %r6, %p2; selp.b32 %r4, 1, 0, %p2;     selp.s32 %r4, %r5, -1, %p2;  selp.f32 %f1, %f2, %f3, %p2;
    selp.u64 %rd5, %rd6, 8, %p2; selp.b64 %rd5, %rd6, %rd7, %p2;
    mov.u32 %r4, %tid.x;         mov.u32 %r4, %laneid;        mov.b32 %r4, %ctaid.y;       mov.u64 %rd5, %clock64;
"""
SLOW = """
    add.sat.s32 %r4, %r5, %r6;   shl.b32 %r4, %r5, %r6;       shr.s32 %r4, %r5, 3;         mul.hi.s32 %r4, %r5, %r6;
    selp.f32 %f1, 0f3F800000, %f3, %p2;                       mov.s32 %r4, %tid.x;         add.f32 %f1, %f2, %f3;       cvt.u32.u16 %r4, %rs1;       mov.b64 %rd5, {%r5, %r6};    setp.lt.s32.and %p1, %r5, %r6, %p2;
"""
PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry k()
{
    .reg .pred %p<4>;
    .reg .b16 %rs<3>;
    .reg .b32 %r<8>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<8>;
""" + FAST + SLOW + """
    ret;
}
"""


class _Warp:
    def __init__(self, prog, rng):
        self.inflight, self.machine = {}, None
        self._specials = {}
        self.R = np.zeros((prog.nregs, 32), np.uint64)
        for i, width in enumerate(prog.reg_width):
            self.R[i] = rng.integers(0, 2, 32, dtype=np.uint64) if width == 1 else \
                rng.integers(0, 1 << 63, 32, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 32, dtype=np.uint64)
            if width < 64 and width != 1:
                self.R[i] &= np.uint64((1 << width) - 1)
        # edges every form must get right: 0, the sign bits, all ones
        for i, width in enumerate(prog.reg_width):
            if width > 1:
                self.R[i, :4] = [0, 1 << (width - 1), (1 << width) - 1, (1 << (width - 1)) - 1]


    def special(self, name):   # fixed per name, as Warp.special gives them (uint64, 32 lanes)
        v = self._specials.get(name)
        if v is None:
            v = self._specials[name] = (np.arange(32, dtype=np.uint64) * np.uint64(0x9E3779B1) +
                                        np.uint64(len(name) << 33)) & np.uint64((1 << 40) - 1)
        return v


def _bodies():
    prog = emu.RawModule(ptx=PTX).program
    f = prog.module.functions["k"]
    ctx = _Ctx(prog, f, prog.func_start["k"])
    out = []
    for ins in f.body:
        base, mods = mods_of(ins.op)
        slow = lookup(ins.op).decoder(ctx, ins, base, mods)
        out.append((ins.text, slow, fast_body(ctx, ins, base, mods, slow)))
    return prog, out


def test_every_listed_form_gets_a_fast_body_and_the_others_none():
    _, bodies = _bodies()
    n_fast = FAST.count(";")
    assert all(fast is not None for _, _, fast in bodies[:n_fast]), [t for t, _, f in bodies[:n_fast] if f is None]
    assert all(fast is None for _, _, fast in bodies[n_fast:]), [t for t, _, f in bodies[n_fast:] if f is not None]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_bodies_write_the_bits_of_the_chapters_bodies(seed):
    prog, bodies = _bodies()
    rng = np.random.default_rng(seed)
    for text, slow, fast in bodies:
        if fast is None:
            continue
        for mask in (ALL, rng.integers(0, 2, 32).astype(bool)):
            w1 = _Warp(prog, np.random.default_rng(seed))
            w2 = _Warp(prog, np.random.default_rng(seed))
            slow(w1, mask)
            fast(w2, mask)
            assert np.array_equal(w1.R, w2.R), text


def test_a_register_an_async_operation_owns_goes_through_the_chapters_body():
    prog, bodies = _bodies()
    text, slow, fast = bodies[0]
    w = _Warp(prog, np.random.default_rng(0))
    seen = []

    class M:
        def inflight_read(self, w, idx, write=False):
            seen.append((idx, write))
    w.machine = M()
    w.inflight = {prog.reg_index[("k", "%r2")]: (1, "line")}
    fast(w, ALL)
    assert seen == [(prog.reg_index[("k", "%r2")], False)], text


def test_cvt_rn_bf16x2_f32_register_body_equals_hw_floats():
    from bwlab.hw import floats as hf
    ptx = PTX.replace("    ret;", "    cvt.rn.bf16x2.f32 %r4, %f1, %f2;\n    ret;")
    prog = emu.RawModule(ptx=ptx).program
    f = prog.module.functions["k"]
    ctx = _Ctx(prog, f, prog.func_start["k"])
    ins = f.body[-2]
    assert ins.op == "cvt.rn.bf16x2.f32"
    base, mods = mods_of(ins.op)
    body = lookup(ins.op).decoder(ctx, ins, base, mods)
    ia, ib, idst = (prog.reg_index[("k", r)] for r in ("%f1", "%f2", "%r4"))
    rng = np.random.default_rng(3)
    edges = np.array([0, 0x80000000, 1, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7F800001, 0xFFFFFFFF,
                      0x7FC00000, 0x7F7F8000, 0x00008000, 0x00018000, 0x3F808000, 0x3F818000, 0x807F8000], np.uint64)
    for it in range(200):
        w = _Warp(prog, rng)
        if it % 2:   # ties: the low 16 bits exactly half
            w.R[ia] = (w.R[ia] & np.uint64(0xFFFF0000)) | np.uint64(0x8000)
        w.R[ia, :16], w.R[ib, 16:] = edges, edges
        want = hf.cvt_x2(w.R[ia].astype(np.uint32), w.R[ib].astype(np.uint32), "f32", "bf16", "rn")
        mask = ALL if it % 3 else rng.integers(0, 2, 32).astype(bool)
        before = w.R[idst].copy()
        body(w, mask)
        assert np.array_equal(w.R[idst], np.where(mask, want.astype(np.uint64), before))
