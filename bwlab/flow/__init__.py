"""The capstone — the whole trip GMEM -> SMEM -> TMEM -> registers -> SMEM -> GMEM as one traced GEMM
(128 x 128 x 64, f16 in, f32 out), built from the five stages' models and run in one of three tiers.

The hops and the PTX ISA sections they follow: cp.async.bulk.tensor (TMA load, with the mbarrier's
expect_tx / complete_tx), tcgen05.mma with its SMEM and instruction descriptors, tcgen05.commit and
mbarrier.try_wait, tcgen05.ld (.32x32b; "Matrix fragments for tcgen05.ld"), st.shared, membar/fence
(fence.proxy.async.shared::cta: "Async proxy"), cp.async.bulk.tensor (TMA store) with its bulk
async-groups. CuTe counterparts: examples/cute/tutorial/blackwell/01_mma_sm100.cu ... 05_*.cu.

Files:
* `problem`  — `FlowProblem`: the values (those of `bwlab.umma.UmmaCase`), tensor maps, descriptors,
  where everything sits in SMEM;
* `trace`    — `HOPS` (instruction, issuer, where the data lives) and `Trace`, the same object in
  every tier: the bytes after each hop, `locate(m, n)`, `compare()`;
* `model`    — the trip by the stage models (`flow_model`), hop functions the hybrid tier reuses;
* `runner`   — the GPU: cuda_src/full_flow_sm100.cu (hardware), cuda_src/full_flow_sm90.cu (hybrid
  pieces and Hopper's own TMA + wgmma path, with %globaltimer stamps);
* `case`     — `Flow` (model / run / check / show, and `trace(tier)`);
* `listing`  — the kernel's PTX with every instruction tied to its hop;
* `timeline` — the model's order of events for one tile (mbarrier phases, tx counts) and the
  measured one, as pictures and Chrome/Perfetto trace JSON;
* `grid`     — the flow tiled over a grid (512 x 1024 x 256): one CTA per tile, a multicast cluster,
  and the 2-SM (cta_group::2) pair, in the model;
* `ordering` — the four ordering points (the `full` and `mma_done` waits, tcgen05.wait::ld, the proxy
  fence): which write each orders before which read, through which proxies, and the trace when one is
  missing (`trace_without`);
* `exercises`, `kernel_edit` — the checks of notebook 06's graded exercises; the kernel-edit one puts
  the learner's K step into full_flow_sm100.cu / full_flow_sm90.cu and the model, and runs it;
* `pictures` — the figures and the widget of notebook 06.

Validation and recordings: `python -m bwlab.checks.flow --out DIR`, `bwlab/checks/record_flow.py`.
"""

from .case import Flow
from .trace import HOP_NAMES

# What the notebooks, the docs and the command lines use from the package's top, and nothing else
# (tests/test_interface.py reads them).
__all__ = ["Flow", "FlowGrid", "format_events", "format_ptx_by_hop", "HOP_NAMES", "K_STEP_TEXT", "kernel_ptx",
           "measured_segments", "model_events", "plot_grid", "plot_hop", "plot_timeline", "trip_widget"]

# The one lazy mechanism: the names of __all__ not imported above, and the other names code written
# against the package's top still reaches, are imported from their module on first use (the
# pictures load matplotlib only then). New code imports a name from its module.
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.flow.case": "flow_tier TIERS",
    "bwlab.flow.grid": "FlowGrid",
    "bwlab.flow.kernel_edit": "K_STEP_TEXT",
    "bwlab.flow.listing": "format_ptx_by_hop kernel_ptx ptx_by_hop",
    "bwlab.flow.model": ("flow_model load_model mma_from_smem mma_k_steps registers_from_tmem st_shared_model "
                         "store_from_smem"),
    "bwlab.flow.ordering": "Ordering ORDERING_NAMES ORDERINGS trace_without",
    "bwlab.flow.pictures": "piece_color plot_grid plot_hop plot_timeline plot_trip trip_widget",
    "bwlab.flow.problem": "FlowProblem LD_ACCESS SMEM_A SMEM_B SMEM_BYTES SMEM_D THREADS",
    "bwlab.flow.timeline": "format_events measured_segments model_events",
    "bwlab.flow.trace": "Hop hop_of HOPS Trace TraceCheck",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
