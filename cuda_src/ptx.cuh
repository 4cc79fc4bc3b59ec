// bwlab: every PTX instruction the suite uses, one named wrapper each, grouped by topic.
//   ptx/common.cuh    types, status record, elect.sync, proxy fences, %globaltimer
//   ptx/cluster.cuh   %cluster_ctarank, barrier.cluster, mapa
//   ptx/mbarrier.cuh  mbarrier init / arrive / expect_tx / try_wait, the bounded wait
//   ptx/tma.cuh       cp.async.bulk(.tensor) load / multicast / prefetch / store / reduce, bulk groups
//   ptx/tcgen05.cuh   tcgen05 alloc / dealloc / relinquish / mma / commit / fences / wait / cp / ld+st 32x32b
//   ptx/tcgen05_ldst.cuh  tcgen05.ld / st in the other shapes (16x64b, 16x128b, 16x256b, 16x32bx2),
//                     the pack::16b / unpack::16b forms of all five, compile-time-num helpers
//   ptx/wgmma.cuh     wgmma.fence / mma_async / commit_group / wait_group (sm_90a only)
//   ptx/smem.cuh      vectorised shared-memory stores and loads (epilogue)
// Wrappers are inline: an instruction reaches the PTX only if a kernel calls it, so a kernel that
// uses no tcgen05 still builds for sm_90a, and one that does builds for sm_100a only.
#pragma once
#include "ptx/common.cuh"
#include "ptx/cluster.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"
#include "ptx/tcgen05.cuh"
#include "ptx/tcgen05_ldst.cuh"
#include "ptx/wgmma.cuh"
#include "ptx/smem.cuh"
