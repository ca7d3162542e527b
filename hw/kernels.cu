// Warpscope's built-in kernels as CUDA, for the hardware check (docs/hardware.md).
//
// Each kernel's index arithmetic, bounds checks and order of global loads and stores are
// exactly those of its generator in src/gen/kernels.rs, so that the L1 requests and sectors
// Nsight Compute counts on a GPU can be compared with what Warpscope's coalescer makes of the
// generated trace. Only 4-byte elements (float).
//
// Usage: kernels NAME key=value...   (the same names, keys and defaults as `warpscope gen`)
//        kernels --cases FILE           (every `NAME key=value...` line of FILE, in order, one
//                                        launch each; `#` starts a comment line)
// Buffers are allocated with cudaMalloc (at least 256-byte aligned, as the generators'
// `align` default) and zeroed; the kernel is launched once.

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "check.cuh"

// Consumes a value through a volatile shared-memory store (not a global access, so not
// counted), so that a load whose result is otherwise unused (the strided read) is kept.
__device__ __forceinline__ void keep(float v) {
    volatile __shared__ float sink[1];
    sink[0] = v;
}

__global__ void k_vecadd(const float* a, const float* b, float* c, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = a[i];
        float y = b[i];
        c[i] = x + y;
    }
}

// Crawford 2014 listing 7.1.
__global__ void k_matmul(const float* A, const float* B, float* C, int n) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < n && col < n) {
        float s = 0.0f;
        for (int k = 0; k < n; k++) s += A[row * n + k] * B[k * n + col];
        C[row * n + col] = s;
    }
}

__global__ void k_matmul_tiled(const float* A, const float* B, float* C, int n) {
    extern __shared__ float sh[];
    int tile = blockDim.x;
    float* As = sh;
    float* Bs = sh + tile * tile;
    int tx = threadIdx.x, ty = threadIdx.y;
    int col = blockIdx.x * tile + tx;
    int row = blockIdx.y * tile + ty;
    float s = 0.0f;
    for (int st = 0; st < n / tile; st++) {
        As[ty * tile + tx] = A[row * n + st * tile + tx];
        Bs[ty * tile + tx] = B[(st * tile + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < tile; k++) s += As[ty * tile + k] * Bs[k * tile + tx];
        __syncthreads();
    }
    C[row * n + col] = s;
}

// Crawford 2014 listing 7.2.
__global__ void k_transpose(float* odata, const float* idata, int w, int h) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < h && col < w) odata[col * h + row] = idata[row * w + col];
}

__global__ void k_transpose_tiled(float* odata, const float* idata, int w, int h) {
    extern __shared__ float sh[];
    int tile = blockDim.x;
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * tile + tx, y = blockIdx.y * tile + ty;
    if (x < w && y < h) sh[ty * (tile + 1) + tx] = idata[y * w + x];
    __syncthreads();
    int x2 = blockIdx.y * tile + tx, y2 = blockIdx.x * tile + ty;
    if (x2 < h && y2 < w) odata[y2 * h + x2] = sh[tx * (tile + 1) + ty];
}

// Crawford 2014 listing 7.3.
__global__ void k_stencil3d(const float* A0, float* Anext, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int j = blockIdx.y * blockDim.y + threadIdx.y + 1;
    int k = blockIdx.z * blockDim.z + threadIdx.z + 1;
#define IDX(i, j, k) ((i) + nx * ((j) + ny * (k)))
    if (i < nx - 1 && j < ny - 1 && k < nz - 1) {
        float kp = A0[IDX(i, j, k + 1)];
        float km = A0[IDX(i, j, k - 1)];
        float jp = A0[IDX(i, j + 1, k)];
        float jm = A0[IDX(i, j - 1, k)];
        float ip = A0[IDX(i + 1, j, k)];
        float im = A0[IDX(i - 1, j, k)];
        float c = A0[IDX(i, j, k)];
        Anext[IDX(i, j, k)] = (kp + km + jp + jm + ip + im) * 0.125f - c * 0.5f;
    }
#undef IDX
}

__global__ void k_stencil2d(const float* in, float* out, int nx, int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
    int j = blockIdx.y * blockDim.y + threadIdx.y + 1;
    if (i < nx - 1 && j < ny - 1) {
        float up = in[(j - 1) * nx + i];
        float left = in[j * nx + i - 1];
        float c = in[j * nx + i];
        float right = in[j * nx + i + 1];
        float down = in[(j + 1) * nx + i];
        out[j * nx + i] = 0.2f * (up + left + c + right + down);
    }
}

// Nugteren et al. 2014 fig. 3: each thread copies one row.
__global__ void k_column_copy(const float* src, float* dst, int width) {
    long long row = threadIdx.x;
    for (int j = 0; j < width; j++) dst[row * width + j] = src[row * width + j];
}

__global__ void k_strided(const float* a, long long n, long long stride) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) keep(a[i * stride]);
}

__global__ void k_reduction(const float* in, float* out, long long n) {
    extern __shared__ float sdata[];
    unsigned tid = threadIdx.x, bx = blockDim.x;
    long long i = (long long)blockIdx.x * (2 * bx) + tid;
    float v = 0.0f;
    if (i < n) v = in[i];
    if (i + bx < n) v += in[i + bx];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned s = bx / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

// ---- parameters, as the generators read them (src/gen/params.rs) ----

struct Params {
    std::map<std::string, std::string> kv;
    long long num(const char* key, long long def) {
        auto it = kv.find(key);
        if (it == kv.end()) return def;
        std::string v = it->second;
        kv.erase(it);
        return atoll(v.c_str());
    }
    dim3 d3(const char* key, dim3 def) {
        auto it = kv.find(key);
        if (it == kv.end()) return def;
        unsigned v[3] = {1, 1, 1};
        int n = sscanf(it->second.c_str(), "%u,%u,%u", &v[0], &v[1], &v[2]);
        kv.erase(it);
        if (n < 1) {
            fprintf(stderr, "bad dim3 `%s`\n", key);
            exit(1);
        }
        return dim3(v[0], v[1], v[2]);
    }
    void done() {
        kv.erase("base");
        kv.erase("align");
        auto e = kv.find("elem");
        if (e != kv.end() && e->second != "4") {
            fprintf(stderr, "only elem=4 is built\n");
            exit(1);
        }
        kv.erase("elem");
        for (auto& p : kv) {
            fprintf(stderr, "unknown parameter `%s`\n", p.first.c_str());
            exit(1);
        }
    }
};

// The buffers of the case being run, freed after its launch.
static std::vector<float*> g_buffers;

static float* buffer(long long elems) {
    float* p = nullptr;
    size_t bytes = (size_t)(elems > 0 ? elems : 1) * sizeof(float);
    CHECK(cudaMalloc(&p, bytes));
    CHECK(cudaMemset(p, 0, bytes));
    g_buffers.push_back(p);
    return p;
}

static unsigned cdiv(long long a, long long b) { return (unsigned)((a + b - 1) / b); }

// Runs one case: `words` is NAME then key=value words.
static int run_case(const std::vector<std::string>& words) {
    std::string name = words[0];
    Params p;
    for (size_t i = 1; i < words.size(); i++) {
        size_t eq = words[i].find('=');
        if (eq == std::string::npos) {
            fprintf(stderr, "expected key=value, found `%s`\n", words[i].c_str());
            return 1;
        }
        p.kv[words[i].substr(0, eq)] = words[i].substr(eq + 1);
    }
    if (name == "vecadd") {
        long long n = p.num("n", 4096);
        dim3 b = p.d3("block", dim3(256));
        p.done();
        unsigned bx = b.x * b.y * b.z;
        float *a = buffer(n), *bb = buffer(n), *c = buffer(n);
        k_vecadd<<<cdiv(n, bx), bx>>>(a, bb, c, n);
    } else if (name == "matmul") {
        long long n = p.num("n", 64);
        dim3 b = p.d3("block", dim3(16, 16));
        p.done();
        float *A = buffer(n * n), *B = buffer(n * n), *C = buffer(n * n);
        k_matmul<<<dim3(cdiv(n, b.x), cdiv(n, b.y), cdiv(1, b.z)), b>>>(A, B, C, (int)n);
    } else if (name == "matmul-tiled") {
        long long n = p.num("n", 64), tile = p.num("tile", 16);
        p.done();
        if (n % tile) {
            fprintf(stderr, "n must be a multiple of tile\n");
            return 1;
        }
        float *A = buffer(n * n), *B = buffer(n * n), *C = buffer(n * n);
        size_t sh = 2 * tile * tile * sizeof(float);
        k_matmul_tiled<<<dim3(n / tile, n / tile), dim3(tile, tile), sh>>>(A, B, C, (int)n);
    } else if (name == "transpose") {
        long long w = p.num("width", 64), h = p.num("height", 64);
        dim3 b = p.d3("block", dim3(16, 16));
        p.done();
        float *o = buffer(w * h), *i = buffer(w * h);
        k_transpose<<<dim3(cdiv(w, b.x), cdiv(h, b.y), cdiv(1, b.z)), b>>>(o, i, (int)w, (int)h);
    } else if (name == "transpose-tiled") {
        long long w = p.num("width", 64), h = p.num("height", 64), tile = p.num("tile", 16);
        p.done();
        float *o = buffer(w * h), *i = buffer(w * h);
        size_t sh = tile * (tile + 1) * sizeof(float);
        k_transpose_tiled<<<dim3(cdiv(w, tile), cdiv(h, tile)), dim3(tile, tile), sh>>>(o, i, (int)w,
                                                                                      (int)h);
    } else if (name == "stencil3d") {
        long long nx = p.num("nx", 18), ny = p.num("ny", 18), nz = p.num("nz", 10);
        dim3 b = p.d3("block", dim3(16, 4, 1));
        p.done();
        float *a0 = buffer(nx * ny * nz), *an = buffer(nx * ny * nz);
        dim3 g(cdiv(nx - 2, b.x), cdiv(ny - 2, b.y), cdiv(nz - 2, b.z));
        k_stencil3d<<<g, b>>>(a0, an, (int)nx, (int)ny, (int)nz);
    } else if (name == "stencil2d") {
        long long nx = p.num("nx", 66), ny = p.num("ny", 66);
        dim3 b = p.d3("block", dim3(16, 16));
        p.done();
        float *in = buffer(nx * ny), *out = buffer(nx * ny);
        k_stencil2d<<<dim3(cdiv(nx - 2, b.x), cdiv(ny - 2, b.y), cdiv(1, b.z)), b>>>(in, out, (int)nx,
                                                                                    (int)ny);
    } else if (name == "column-copy") {
        long long threads = p.num("threads", 256), width = p.num("width", 1024);
        p.done();
        float *src = buffer(threads * width), *dst = buffer(threads * width);
        k_column_copy<<<1, (unsigned)threads>>>(src, dst, (int)width);
    } else if (name == "strided") {
        long long n = p.num("n", 4096), stride = p.num("stride", 32);
        dim3 b = p.d3("block", dim3(256));
        p.done();
        unsigned bx = b.x * b.y * b.z;
        float* a = buffer(n * stride);
        k_strided<<<cdiv(n, bx), bx>>>(a, n, stride);
    } else if (name == "reduction") {
        long long n = p.num("n", 8192);
        dim3 b = p.d3("block", dim3(256));
        p.done();
        unsigned bx = b.x * b.y * b.z;
        long long ctas = (n + 2 * bx - 1) / (2 * bx);
        float *in = buffer(n), *out = buffer(ctas);
        k_reduction<<<(unsigned)ctas, bx, bx * sizeof(float)>>>(in, out, n);
    } else {
        fprintf(stderr, "unknown kernel `%s`\n", name.c_str());
        return 1;
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (float* b : g_buffers) CHECK(cudaFree(b));
    g_buffers.clear();
    printf("ok %s\n", name.c_str());
    return 0;
}

static std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && isspace((unsigned char)line[i])) i++;
        size_t j = i;
        while (j < line.size() && !isspace((unsigned char)line[j])) j++;
        if (j > i) words.push_back(line.substr(i, j - i));
        i = j;
    }
    return words;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: kernels NAME key=value... | kernels --cases FILE\n");
        return 1;
    }
    if (std::string(argv[1]) == "--cases" && argc == 3) {
        FILE* f = fopen(argv[2], "r");
        if (!f) {
            fprintf(stderr, "cannot open %s\n", argv[2]);
            return 1;
        }
        char buf[1024];
        int n = 0;
        while (fgets(buf, sizeof buf, f)) {
            std::vector<std::string> words = split(buf);
            if (words.empty() || words[0][0] == '#') continue;
            n++;
            if (run_case(words) != 0) {
                fprintf(stderr, "case %d failed\n", n);
                return 1;
            }
        }
        fclose(f);
        return 0;
    }
    std::vector<std::string> words(argv + 1, argv + argc);
    return run_case(words);
}
