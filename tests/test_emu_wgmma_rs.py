"""wgmma with A from registers in the emulator (PTX ISA, wgmma.mma_async with a vector of four .b32 registers
for A): the fragment layout (each thread's rows and columns), the arithmetic (the corpus kernel
wgmma_rs_bf16_m64n32k16, also recorded on an H200 in tests/data/emu_corpus/mma.npz), and the rule that A's
fragment registers belong to the instruction until a wgmma.wait_group retires it."""
import os

import numpy as np
import pytest

from bwlab import emu
from bwlab.emu.errors import ProtocolError

pytestmark = pytest.mark.usefixtures("emulated_tier")

CORPUS_MMA = os.path.join(os.path.dirname(__file__), "..", "cuda_src", "corpus", "mma.cu")


def _bf16_bits(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _a_words(a):
    """A (64 x 16 bf16 bits) -> the 128 threads' four fragment words, as the PTX ISA lays them out: warp w, lane
    (g, q): a0 = row 16w+g, columns 2q, 2q+1; a1 = row 16w+g+8, the same; a2, a3 = columns 2q+8, 2q+9."""
    words = np.zeros((128, 4), np.uint32)
    for t in range(128):
        w, g, q = t // 32, (t % 32) // 4, t % 4
        for i, (r, c) in enumerate([(g, 2 * q), (g + 8, 2 * q), (g, 2 * q + 8), (g + 8, 2 * q + 8)]):
            lo, hi = a[16 * w + r, c], a[16 * w + r, c + 1]
            words[t, i] = np.uint32(lo) | (np.uint32(hi) << 16)
    return words.reshape(-1)


def _d_index():
    """(thread, i) of D[m][n] for m64n32: warp w rows 16w..; lane l rows l/4 and l/4 + 8, columns 2(l%4) + {0, 1}
    of each 8-column block; register i = 4 (n / 8) + 2 (row half) + n % 2."""
    m, n = np.meshgrid(np.arange(64), np.arange(32), indexing="ij")
    thread = 32 * (m // 16) + 4 * (m % 8) + (n % 8) // 2
    reg = 4 * (n // 8) + 2 * ((m % 16) // 8) + n % 2
    return thread, reg


def _run_corpus_kernel(a_words, b_bits, c_acc):
    mod = emu.RawModule(code=open(CORPUS_MMA).read())
    d = emu.zeros(2048, np.float32)
    mod.get_function("wgmma_rs_bf16_m64n32k16")((1,), (128,), (emu.asarray(a_words), emu.asarray(
        b_bits.reshape(-1).view(np.uint32)), emu.asarray(c_acc), d))
    return d.get()


def test_the_fragment_layout_and_an_exact_product():
    """Small integers: every sum is exact, so D = C + A B^T bit for bit shows each element of A's fragment
    (and of D) where the layout says it is."""
    rng = np.random.default_rng(5)
    a = rng.integers(-4, 5, (64, 16)).astype(np.float32)
    b = rng.integers(-4, 5, (32, 16)).astype(np.float32)
    c = rng.integers(-64, 65, (64, 32)).astype(np.float32)
    thread, reg = _d_index()
    c_acc = np.zeros((128, 16), np.float32)
    c_acc[thread, reg] = c
    d = _run_corpus_kernel(_a_words(_bf16_bits(a)), _bf16_bits(b), c_acc.reshape(-1)).reshape(128, 16)
    assert np.array_equal(d[thread, reg], c + a @ b.T)


def test_a_transposed_fragment_is_a_different_product():
    """The control: A's words for its transpose-like misreading (rows and column halves swapped in the
    fragment) give a different D, so the test above can fail."""
    rng = np.random.default_rng(6)
    a = rng.integers(-4, 5, (64, 16)).astype(np.float32)
    b = rng.integers(-4, 5, (32, 16)).astype(np.float32)
    words = _a_words(_bf16_bits(a)).reshape(128, 4)[:, [0, 2, 1, 3]].reshape(-1)
    thread, reg = _d_index()
    d = _run_corpus_kernel(words, _bf16_bits(b), np.zeros(2048, np.float32)).reshape(128, 16)
    assert not np.array_equal(d[thread, reg], a @ b.T)


COMMIT = 'asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");'
# the corpus kernel with A's register a1 touched between the commit and the wait: the rule broken
TOUCH = COMMIT + '\n    asm volatile("add.u32 %0, %0, 7;" : "+r"(a1));\n    d[16 * t] = float(a1);'


def test_writing_a_fragment_register_before_the_wait_is_named():
    src = open(CORPUS_MMA).read()
    assert src.count(COMMIT) == 1
    mod = emu.RawModule(code=src.replace(COMMIT, TOUCH))
    with pytest.raises(ProtocolError, match="A-fragment register") as e:
        mod.get_function("wgmma_rs_bf16_m64n32k16")((1,), (128,), (emu.asarray(np.zeros(512, np.uint32)), emu.asarray(
            np.zeros(256, np.uint32)), emu.asarray(np.zeros(2048, np.float32)), emu.zeros(2048, np.float32)))
    assert "wgmma.wait_group" in str(e.value)
