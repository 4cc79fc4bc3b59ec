// Scheduling: code that is correct only if diverged threads and co-resident blocks make progress
// independently (Volta's independent thread scheduling, blocks that spin on each other), and two
// racy kernels whose result depends on the order the hardware picked.

extern "C" __global__ void sched_warp_spinlock(int* lock, int* counter, int* order) {
    // all 32 lanes of a warp contend for one lock: needs independent thread scheduling
    int t = threadIdx.x;
    bool done = false;
    while (!done) {
        if (atomicCAS(lock, 0, 1) == 0) {
            int v = *((volatile int*)counter);
            *((volatile int*)counter) = v + 1;
            order[t] = v;
            __threadfence();
            atomicExch(lock, 0);
            done = true;
        }
    }
}

extern "C" __global__ void sched_two_block_handshake(volatile int* flags, int* data, int* out) {
    // block 0 produces, block 1 consumes and answers, block 0 reads the answer: both must be resident
    int t = threadIdx.x;
    if (blockIdx.x == 0) {
        data[t] = t * t + 1;
        __threadfence();
        __syncthreads();
        if (t == 0) flags[0] = 1;
        if (t == 0) while (flags[1] == 0) { }
        __syncthreads();
        __threadfence();
        out[t] = data[64 + t];
    } else {
        if (t == 0) while (flags[0] == 0) { }
        __syncthreads();
        __threadfence();
        data[64 + t] = data[t] * 2 + 1;
        __threadfence();
        __syncthreads();
        if (t == 0) flags[1] = 1;
        out[64 + t] = -1;
    }
}

extern "C" __global__ void __cluster_dims__(2, 1, 1) sched_cluster_nanosleep(volatile int* flag, int* out) {
    // CTA 1 of the cluster naps until CTA 0 (which naps first) raises a flag in global memory
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    int t = threadIdx.x;
    if (rank == 0) {
        if (t == 0) { __nanosleep(2000); *flag = 7; }
    } else if (t == 0) {
        while (*flag != 7) __nanosleep(100);
    }
    asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
    out[rank * blockDim.x + t] = (rank + 1) * 100 + t + (*flag) * 1000;
}

extern "C" __global__ void sched_intra_block_flag(int* out) {
    // warp 1 waits for a flag in shared memory that warp 0 sets after some work, no __syncthreads
    __shared__ volatile int flag;
    __shared__ int payload[32];
    int t = threadIdx.x, lane = t & 31;
    if (t == 0) flag = 0;
    __syncthreads();
    if (t < 32) {
        payload[lane] = lane * 3 + 1;
        __threadfence_block();
        if (lane == 0) flag = 1;
    } else if (t < 64) {
        while (flag == 0) { }
        __threadfence_block();
        out[lane] = payload[31 - lane];
    }
}

extern "C" __global__ void sched_producer_consumer(const int* a, int* out) {
    __shared__ int buf[2][64];
    int t = threadIdx.x;
    int acc = 0;
    for (int round = 0; round < 4; ++round) {
        if (t < 64) buf[round & 1][t] = a[round * 64 + t] + acc;
        __syncthreads();
        if (t >= 64) acc += buf[round & 1][127 - t];
        else acc ^= buf[round & 1][(t + 1) & 63];
        __syncthreads();
    }
    out[t] = acc;
}

extern "C" __global__ void sched_racy_increment(int* counter) {
    // two warps do an unprotected read-modify-write: 1, 2 or 3 are all possible
    if ((threadIdx.x & 31) == 0) {
        volatile int* c = counter;
        int v = *c;
        for (int k = 0; k < 64 * (threadIdx.x >> 5); ++k) __nanosleep(0);
        *c = v + 1 + (threadIdx.x >> 5);
    }
}

extern "C" __global__ void sched_racy_last_writer(int* slot, int* out) {
    // four warps write their own number to one word; what stays is the last writer's
    int w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 5) *((volatile int*)slot) = w + 1;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = *slot;
}
