"""CTAs per SM of each ladder step, and of step 2 at other ring depths, from the CUDA driver's occupancy
calculator (cuOccupancyMaxActiveBlocksPerMultiprocessor) on this GPU, with the kernel's registers and
static SMEM as the driver reports them. tests/test_gemm_notebook.py compares each line with
bwlab.gemm.occupancy, which computes the same from the cubin without a GPU.

    python3 docs/results/gemm_occupancy.py     (an sm_90 GPU, from the repository root, PYTHONPATH=.)
"""
import dataclasses, cupy as cp
from bwlab.compile import load_module
from bwlab.gemm.ladder import STEPS, step
def occ(fn,t,m):
    try: return cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.kernel.ptr,t,m)
    except AttributeError:
        from cuda.bindings import driver as cu
        e,n=cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(cu.CUfunction(fn.kernel.ptr),t,m); return (e,n)
for s,n in [(s,None) for s in STEPS]+[(step('s2'),k) for k in (2,4,6)]:
    if n: s=dataclasses.replace(s,stages=n)
    f=load_module(s.path,defines={'GEMM_STAGES':n} if n else None).get_function('gemm')
    f.max_dynamic_shared_size_bytes=s.smem_bytes
    a=f.attributes
    print(s.name,s.stages,'ctas/SM',occ(f,s.threads,s.smem_bytes),'regs',a['num_regs'],'static',a['shared_size_bytes'])
