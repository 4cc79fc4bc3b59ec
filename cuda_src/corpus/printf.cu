// printf from kernels. Every line starts with "w<warp> " (the warp's index in the grid) so the
// comparison can group the lines per warp: across warps a GPU may print in any order.
#define WARP ((blockIdx.x * blockDim.x + threadIdx.x) >> 5)

extern "C" __global__ void printf_ints(const int* a, const long long* b) {
    int t = threadIdx.x;
    printf("w%d t=%d d=%d u=%u x=%x X=%X lld=%lld llx=%llx\n", WARP, t, a[t], (unsigned)a[t], a[t], a[t], b[t],
           (unsigned long long)b[t]);
}

extern "C" __global__ void printf_floats(const float* a, const double* b) {
    int t = threadIdx.x;
    printf("w%d t=%d f=%f e=%e g=%g .3f=%.3f 12.4e=%12.4e .10g=%.10g lf=%f\n", WARP, t, a[t], a[t], a[t], a[t],
           b[t], b[t], b[t]);
}

extern "C" __global__ void printf_widths_flags(const int* a) {
    int t = threadIdx.x;
    printf("w%d [%08d] [%-6d] [%+d] [% d] [%#x] [%#o] [%5.2f] [%.0e] [%-10.3s] [%c%c] [%%]\n", WARP, a[t], a[t], a[t],
           a[t], (unsigned)a[t], (unsigned)a[t] & 0777, a[t] * 0.01f, (double)a[t] * 1e5, "abcdefgh" + (t & 7),
           'A' + (t % 26), t & 1 ? '!' : '?');
}

extern "C" __global__ void printf_strings(const int* a) {
    const char* names[4] = {"zero", "one", "two", "three"};
    int t = threadIdx.x;
    if (a[t] & 1) printf("w%d %s:%d|%10s|%-10s|\n", WARP, names[a[t] & 3], t, names[(a[t] >> 2) & 3], "left");
}

extern "C" __global__ void printf_diverged_warps(const int* a) {
    int t = threadIdx.x, lane = t & 31;
    if (lane % 3 == 0) printf("w%d lane %d takes branch A with %d\n", WARP, lane, a[t]);
    else if (lane % 3 == 1) printf("w%d lane %d B %x\n", WARP, lane, a[t]);
    if (lane == 31) printf("w%d last lane done, no args\n", WARP);
}

extern "C" __global__ void printf_special_floats(const float* a) {
    int t = threadIdx.x;
    printf("w%d [%f] [%e] [%g] [%8.1f] [%a]\n", WARP, a[t], a[t], a[t], a[t], (double)a[t]);
}

extern "C" __global__ void printf_more_formats(const int* a, const double* d) {
    int t = threadIdx.x;
    printf("w%d %i %o %E %G %lu %hhd %hd %5.1E %-+8.3G| %.3d %x%%\n", WARP, a[t], (unsigned)a[t] & 07777, d[t], d[t],
           (unsigned long)(unsigned)a[t], (signed char)a[t], (short)a[t], d[t], d[t], a[t] & 0xff, a[t]);
}
