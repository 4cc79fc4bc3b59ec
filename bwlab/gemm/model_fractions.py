"""Each Hopper ladder rung's fraction of the best library GEMM at 8192^3, predicted by the timing model
(H100 SXM description): the library's median time in the rung's sustained-protocol report over the
rung's time that bwlab.timing predicts at the SM clock measured during the rung's own blocks
(docs/results/timing_hopper.txt; docs/timing.md). `ladder.Step.predicted` reads it.

Written by `python -m bwlab.timing fractions --write`; tests/test_timing.py checks it is what the code
computes from the committed table. Do not edit by hand."""

FRACTIONS = {
    "s1_one_warpgroup": 0.811,
    "s2_pipeline": 0.681,
    "s3_warp_specialized": 0.960,
    "s4_persistent": 0.967,
    "s5_cluster_multicast": 0.980,
    "s6_tma_store": 1.032,
    "s7_hilbert_order": 1.008,
    "sk_split_k": 0.968,
    "s8_epilogue_overlap": 1.035,
}
