// Pointer-chasing micro-benchmarks of the L1 data cache, in the style of Jia et al. 2018
// ("Dissecting the NVIDIA Volta GPU architecture via microbenchmarking"): one thread follows a
// chain of pointers laid out with a fixed stride over a span of memory, so every load depends
// on the one before and its latency is measured with the SM's cycle counter.
//
// Prints CSV on stdout, one row per measurement:
//   experiment,carveout,stride_bytes,span_bytes,index,cycles
// - `capacity`: average cycles per load over a warmed chain (index -1). The span at which
//   the average jumps is the L1 capacity; how that span moves with the stride gives the
//   allocation unit (line size). `carveout` is `default` (the driver's choice).
// - `fill`: the first loads of a cold chain with a 4-byte stride, one row per load (index =
//   its position): a miss every 32 B means sectors are filled one at a time, every 128 B
//   means whole lines.
// - `warm-fill`: the same chain read again (all hits).
// - `capacity-fine`: `capacity` with a 128 B stride in 1 KB steps, at several preferred
//   shared-memory carve-outs (`default`, or a percentage: 0 % asks for the most L1).
// - `store-then-load`: one thread stores a chain into a buffer, then times each load of it.
// - `conflict`: `n` (the index column) lines a power-of-two stride apart, average cycles per load
//   of the warmed chain: the `n` where misses start, per stride, bounds the ways of a set.
// Device properties go to stderr.

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.cuh"

__device__ __forceinline__ unsigned long long ld_ca_u64(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned ld_ca_u32(const unsigned* p) {
    unsigned v;
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Follows `warm` pointers, then times `steps` more.
__global__ void chase(const unsigned long long* start, long long warm, long long steps,
                      long long* cycles, unsigned long long* sink) {
    const unsigned long long* p = start;
    for (long long i = 0; i < warm; i++) p = (const unsigned long long*)ld_ca_u64(p);
    long long t0 = clock64();
    for (long long i = 0; i < steps; i++) p = (const unsigned long long*)ld_ca_u64(p);
    long long t1 = clock64();
    cycles[0] = t1 - t0;
    sink[0] = (unsigned long long)p;
}

// Stores the chain a[j] = j + 1 over `n` words of a buffer the L1 has not seen, then times
// each load of it: L1 hit latencies mean that stores allocate lines in the L1.
__global__ void store_then_load(unsigned* a, int n, unsigned* lat, unsigned* sink) {
    __shared__ unsigned s_lat[512];
    __shared__ unsigned s_idx[512];
    for (int i = 0; i < n; i++) {
        unsigned v = (unsigned)(i + 1);
        asm volatile("st.global.u32 [%0], %1;" ::"l"(a + i), "r"(v) : "memory");
    }
    unsigned j = 0;
    for (int i = 0; i < n; i++) {
        long long t0 = clock64();
        j = ld_ca_u32(a + j);
        s_idx[i] = j;
        long long t1 = clock64();
        s_lat[i] = (unsigned)(t1 - t0);
    }
    for (int i = 0; i < n; i++) {
        lat[i] = s_lat[i];
        sink[0] += s_idx[i];
    }
}

// Times each of the first `n` loads of the chain a[j] = j + 1, twice: cold, then warm.
__global__ void fill(const unsigned* a, int n, unsigned* lat, unsigned* sink) {
    __shared__ unsigned s_lat[2 * 512];
    __shared__ unsigned s_idx[2 * 512];
    for (int pass = 0; pass < 2; pass++) {
        unsigned j = 0;
        for (int i = 0; i < n; i++) {
            long long t0 = clock64();
            j = ld_ca_u32(a + j);
            s_idx[pass * n + i] = j;
            long long t1 = clock64();
            s_lat[pass * n + i] = (unsigned)(t1 - t0);
        }
    }
    for (int i = 0; i < 2 * n; i++) {
        lat[i] = s_lat[i];
        sink[0] += s_idx[i];
    }
}

// Builds a chain of `span` bytes with `stride`, runs it with the preferred shared-memory
// carve-out `carveout` (percent, -1 for the driver's default) and returns milli-cycles per load.
static long long run_chain(unsigned long long* dev, size_t span, size_t stride, int carveout,
                           long long* d_cycles, unsigned long long* d_sink) {
    size_t n = span / stride;
    std::vector<unsigned long long> host(span / 8, 0);
    unsigned long long base = (unsigned long long)dev;
    for (size_t k = 0; k < n; k++) host[k * stride / 8] = base + ((k + 1) % n) * stride;
    CHECK(cudaMemcpy(dev, host.data(), span, cudaMemcpyHostToDevice));
    CHECK(cudaFuncSetAttribute(chase, cudaFuncAttributePreferredSharedMemoryCarveout, carveout));
    long long steps = (long long)n * 4;
    if (steps < 4096) steps = 4096;
    if (steps > 65536) steps = 65536;
    chase<<<1, 1>>>(dev, 2 * (long long)n, steps, d_cycles, d_sink);
    CHECK(cudaGetLastError());
    long long cycles = 0;
    CHECK(cudaMemcpy(&cycles, d_cycles, sizeof cycles, cudaMemcpyDeviceToHost));
    return cycles * 1000 / steps;  // milli-cycles per load
}

// A chain of `n` lines `stride` bytes apart (only its `n` pointers are written), run with the
// driver's carve-out; milli-cycles per load. For the associativity: lines that share a set.
static long long run_sparse_chain(unsigned long long* dev, size_t n, size_t stride,
                                  long long* d_cycles, unsigned long long* d_sink) {
    unsigned long long base = (unsigned long long)dev;
    for (size_t k = 0; k < n; k++) {
        unsigned long long next = base + ((k + 1) % n) * stride;
        CHECK(cudaMemcpy((char*)dev + k * stride, &next, sizeof next, cudaMemcpyHostToDevice));
    }
    CHECK(cudaFuncSetAttribute(chase, cudaFuncAttributePreferredSharedMemoryCarveout, -1));
    long long steps = 4096;
    chase<<<1, 1>>>(dev, 4 * (long long)n, steps, d_cycles, d_sink);
    CHECK(cudaGetLastError());
    long long cycles = 0;
    CHECK(cudaMemcpy(&cycles, d_cycles, sizeof cycles, cudaMemcpyDeviceToHost));
    return cycles * 1000 / steps;
}

int main() {
    cudaDeviceProp pr;
    CHECK(cudaGetDeviceProperties(&pr, 0));
    fprintf(stderr,
            "device %s, cc %d.%d, %d SMs, L2 %d B, shared per SM %zu B, shared per block optin "
            "%zu B, persisting L2 max %d B\n",
            pr.name, pr.major, pr.minor, pr.multiProcessorCount, pr.l2CacheSize,
            pr.sharedMemPerMultiprocessor, pr.sharedMemPerBlockOptin, pr.persistingL2CacheMaxSize);
    const size_t max_span = 2u << 20;
    unsigned long long* dev = nullptr;
    long long* d_cycles = nullptr;
    unsigned long long* d_sink = nullptr;
    CHECK(cudaMalloc(&dev, max_span));
    CHECK(cudaMalloc(&d_cycles, sizeof(long long)));
    CHECK(cudaMalloc(&d_sink, sizeof(unsigned long long)));
    CHECK(cudaMemset(d_sink, 0, sizeof(unsigned long long)));
    printf("experiment,carveout,stride_bytes,span_bytes,index,cycles\n");
    // Capacity and allocation unit: spans of 8 KB steps (16 KB for the widest stride).
    const size_t strides[] = {32, 64, 128, 256};
    for (size_t stride : strides) {
        size_t top = stride == 256 ? (768u << 10) : (384u << 10);
        size_t step = stride == 256 ? (16u << 10) : (8u << 10);
        for (size_t span = step; span <= top; span += step) {
            long long mc = run_chain(dev, span, stride, -1, d_cycles, d_sink);
            printf("capacity,default,%zu,%zu,-1,%lld.%03lld\n", stride, span, mc / 1000, mc % 1000);
        }
    }
    // The capacity in 1 KB steps, at the default carve-out and at preferred carve-outs of
    // 0 % (the most L1), 25 %, 50 % and 100 % (the most shared memory).
    const int carveouts[] = {-1, 0, 25, 50, 100};
    for (int c : carveouts) {
        char name[16];
        if (c < 0)
            snprintf(name, sizeof name, "default");
        else
            snprintf(name, sizeof name, "%d%%", c);
        for (size_t span = 1u << 10; span <= (260u << 10); span += 1u << 10) {
            long long mc = run_chain(dev, span, 128, c, d_cycles, d_sink);
            printf("capacity-fine,%s,128,%zu,-1,%lld.%03lld\n", name, span, mc / 1000, mc % 1000);
        }
    }
    // Latency of loads that miss the L1 and hit the L2: a 2 MB chain with a 128 B stride.
    {
        long long mc = run_chain(dev, max_span, 128, -1, d_cycles, d_sink);
        printf("capacity,default,128,%zu,-1,%lld.%03lld\n", max_span, mc / 1000, mc % 1000);
    }
    // Associativity: n lines a power-of-two stride apart, n up to 96 (64 MB buffer). Where
    // the lines of a stride fall into few sets, misses start once n passes the ways.
    {
        const size_t big = 64u << 20;
        unsigned long long* wide = nullptr;
        CHECK(cudaMalloc(&wide, big));
        for (size_t stride = 128; stride <= (512u << 10); stride *= 2) {
            for (size_t n = 1; n <= 96 && n * stride <= big; n += (n < 64 ? 1 : 8)) {
                long long mc = run_sparse_chain(wide, n, stride, d_cycles, d_sink);
                printf("conflict,default,%zu,%zu,%zu,%lld.%03lld\n", stride, n * stride, n, mc / 1000,
                       mc % 1000);
            }
        }
        CHECK(cudaFree(wide));
    }
    // Fill granularity: a fresh cold buffer read with a 4-byte stride.
    {
        const int n = 512;
        unsigned* a = nullptr;
        unsigned* lat = nullptr;
        CHECK(cudaMalloc(&a, 64u << 10));
        CHECK(cudaMalloc(&lat, 2 * n * sizeof(unsigned)));
        std::vector<unsigned> host(16u << 10);
        for (size_t i = 0; i < host.size(); i++) host[i] = (unsigned)(i + 1);
        CHECK(cudaMemcpy(a, host.data(), 64u << 10, cudaMemcpyHostToDevice));
        fill<<<1, 1>>>(a, n, lat, (unsigned*)d_sink);
        CHECK(cudaGetLastError());
        std::vector<unsigned> out(2 * n);
        CHECK(cudaMemcpy(out.data(), lat, 2 * n * sizeof(unsigned), cudaMemcpyDeviceToHost));
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < n; i++)
                printf("%s,default,4,%d,%d,%u\n", pass ? "warm-fill" : "fill", 4 * n, i,
                       out[pass * n + i]);
    }
    // Stores then loads: a fresh zeroed buffer, written by the kernel, then read back.
    {
        const int n = 256;
        unsigned* a = nullptr;
        unsigned* lat = nullptr;
        CHECK(cudaMalloc(&a, 64u << 10));
        CHECK(cudaMemset(a, 0, 64u << 10));
        CHECK(cudaMalloc(&lat, n * sizeof(unsigned)));
        store_then_load<<<1, 1>>>(a, n, lat, (unsigned*)d_sink);
        CHECK(cudaGetLastError());
        std::vector<unsigned> out(n);
        CHECK(cudaMemcpy(out.data(), lat, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) printf("store-then-load,default,4,%d,%d,%u\n", 4 * n, i, out[i]);
    }
    CHECK(cudaDeviceSynchronize());
    return 0;
}
