// gemv_stream.cu: the zoo's streaming kernel for skinny GEMMs (1-8 rows of C), on the CUDA
// cores. A GEMM of a few rows against a large weight matrix (LLM decoding: x[1, K] @ W[K, N])
// is a read of B and little else: a tile kernel spends its MMAs on rows that are not there
// and streams B through a few CTAs; this one spreads B over every SM in 16-byte loads.
//
//   C[M,N] = A[M,K] @ B[K,N]; A, B fp16 or bf16 row-major (row strides lda, ldb, in elements),
//   C row-major (ldc) in the input dtype or fp32; FP32 accumulation. Any M, N, K >= 1 (M up to
//   65535 row groups); B's rows 16-byte aligned (ldb % 8 == 0; the host copies others).
//   Built for skinny M: every group of ROWS (ZOO_BM) rows of C reads all of B once.
//   Runs on CC >= 7.5 (nothing arch-specific); compiled per config by NVRTC.
//
// Launch: grid (ceil(N / BN), splits, ceil(M / ROWS)), THREADS threads, ZOO_SMEM_BYTES of
//   dynamic shared memory. Block (x, y, z) owns columns [x*BN, x*BN + BN) of rows z*ROWS ..
//   z*ROWS + ROWS - 1 of C, over rows [y*kps, y*kps + kps) of B (kps = k_per_split <= BK).
// Per block: its slice of A goes to shared memory as fp32 (As[k][row]); lane l of every warp
//   owns columns x*BN + 8l .. +7 and the warps take B's rows in turn, in rounds of LOADS rows
//   (LDG.128 each), a round loaded into registers while the FFMAs run on the one before:
//   ROWS x 8 accumulators per lane. The warps' sums meet in shared memory, a row of C at a time.
// Split K (splits > 1): each block writes its fp32 partial to the workspace, counts itself in
//   (one acq_rel atomic), and the last of a column block adds the partials in split
//   order (the same sum whichever block comes last) and stores C; it sets the count back to
//   zero for the next launch on the stream.
// Tails: a lane whose 8 columns run past N loads element by element (zero past N); rows of
//   A past M are zero; stores past M, N are skipped.
// Built with -DZOO_B_K_MAJOR (B given column-major, as B^T (N, K) row-major with row stride
//   ldb: torch.nn.Linear's x @ W^T reads W in place, as LLM decoding does): a column of C is a
//   dot product along a row of B^T, and BN may be any whole number of columns per warp (a
//   decoding GEMM wants narrow blocks: many of them, each streaming whole rows of B^T). Each
//   warp takes BN / WARPS columns, LOADS at a time per lane group: a column gets `lanes` lanes
//   (its slice's 16-byte chunks, at most 32, a power of two), each loading DEPTH of its chunks
//   of each of the LOADS columns at once (LDG.128 along K) and FMAing them with A's chunks,
//   read from global memory (L1 hits: every warp reads the same A); the lanes add their sums
//   by shuffles. Slices start on whole chunks (k_per_split % 8 == 0); a chunk past the slice's
//   end, or of an A whose rows are not 16-byte aligned, loads element by element.
//
// Run it: zoo bench --shapes 1x4096x4096 --kernel sm75_gemv_stream   (see README.md)

#include "common/zoo_common.cuh"

// Config (set by the host from configs/sm75_gemv_stream.yaml; defaults = config "1x256").
#ifndef ZOO_BM
#define ZOO_BM 1
#define ZOO_BN 256
#define ZOO_BK 512
#define ZOO_STAGES 4
#define ZOO_THREADS 256
#define ZOO_SMEM_BYTES 8192
#endif

#ifndef ZOO_B_K_MAJOR
#define ZOO_B_K_MAJOR 0
#endif

namespace zoo_gemv {

constexpr int ROWS = ZOO_BM;        // rows of C a block computes (the problem's M is at most this)
constexpr int BN = ZOO_BN;          // columns of C per block: 8 per lane
constexpr int KS_MAX = ZOO_BK;      // most rows of B (K) per block
constexpr int LOADS = ZOO_STAGES;   // 16-byte loads a round of a lane (two rounds in flight)
constexpr int THREADS = ZOO_THREADS;
constexpr int WARPS = THREADS / 32;
constexpr bool B_K_MAJOR = ZOO_B_K_MAJOR;
// Shared memory: the block's slice of A as fp32, then (reused) the warps' sums of one row;
// none for a narrow block (BN < 256: a K-major build only, which stages nothing).
constexpr int SMEM_BYTES = BN == 256 ? zoo::cmax(KS_MAX * ROWS, WARPS * BN) * 4 : 0;

static_assert(B_K_MAJOR || BN == 256, "a warp covers 32 lanes x 8 columns (row-major B)");
static_assert(THREADS % 32 == 0 && THREADS >= 32 && THREADS <= 1024, "whole warps");
static_assert(ROWS >= 1 && ROWS <= 8, "1-8 rows of C per block (ROWS x 8 accumulators a lane)");
static_assert(KS_MAX % WARPS == 0, "a K slice is a whole number of rounds of the warps");
static_assert(KS_MAX % 8 == 0 && BN % WARPS == 0, "whole chunks a slice, whole columns a warp (K-major)");
static_assert(SMEM_BYTES == ZOO_SMEM_BYTES, "host smem formula (zoo/specs/gemv.py) disagrees with the kernel");

__device__ __forceinline__ float to_float(half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ __forceinline__ float2 to_float2(half2 v) { return __half22float2(v); }
__device__ __forceinline__ float2 to_float2(__nv_bfloat162 v) { return __bfloat1622float2(v); }

// A 16-byte chunk of 8 fp16 (Pair = half2) or bf16 (__nv_bfloat162) elements as 8 floats.
template <typename Pair>
__device__ __forceinline__ void unpack8(const uint4& v, float* f) {
  const Pair* h = reinterpret_cast<const Pair*>(&v);
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const float2 x = to_float2(h[e]);
    f[2 * e] = x.x, f[2 * e + 1] = x.y;
  }
}
__device__ __forceinline__ void to_float8(const uint4& v, float* f, half) { unpack8<half2>(v, f); }
__device__ __forceinline__ void to_float8(const uint4& v, float* f, __nv_bfloat16) { unpack8<__nv_bfloat162>(v, f); }

// The first `valid` (at most 8) elements at p, one by one, as a chunk zero past them; built in
// registers (no addressable local array: that would go to the stack).
template <typename T>
__device__ __forceinline__ uint4 load_elements(const T* p, int valid) {
  const unsigned short* q = reinterpret_cast<const unsigned short*>(p);
  unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
  for (int i = 0; i < 8; ++i)
    if (i < valid) w[i / 2] |= static_cast<unsigned>(__ldg(q + i)) << (16 * (i % 2));
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// B[k][col .. col+7] as one 16-byte chunk; element by element where it runs past N (valid < 8).
template <typename T>
__device__ __forceinline__ uint4 load_chunk(const T* p, int valid) {
  if (valid >= 8) return __ldg(reinterpret_cast<const uint4*>(p));
  return load_elements(p, valid);
}

// A's slice, read along k (coalesced), kept as fp32 in As[k][row]; rows past M are zero.
template <typename T>
__device__ __forceinline__ void stage_a(float* smem, const T* __restrict__ A, int lda, int row0, int rows,
                                        int k0, int depth) {
  for (int i = threadIdx.x; i < ROWS * depth; i += THREADS) {
    const int r = i / depth, kk = i - r * depth;
    smem[kk * ROWS + r] = r < rows ? to_float(A[static_cast<long long>(row0 + r) * lda + k0 + kk]) : 0.f;
  }
}

// A 16-byte chunk of 8 elements, or element by element (valid < 8, or a row that is not
// 16-byte aligned: vec false); zero past `valid`.
template <typename T>
__device__ __forceinline__ uint4 load_chunk_any(const T* p, int valid, bool vec) {
  return vec ? load_chunk(p, valid) : load_elements(p, valid < 8 ? valid : 8);
}

// K-major B: this block's columns of C over its slice, each column's dot products summed by
// its lanes; stored to C (one slice) or to this slice's partials. A lane keeps LOADS columns x
// DEPTH chunks of B in flight (a decoding GEMM's B streams in one or two DRAM round trips) and
// reads A's chunks straight from global memory: every warp reads the same few KB of A, so all
// but the first reads hit L1, and no block waits on staging A before its first B load.
constexpr int DEPTH = LOADS >= 16 ? 1 : 16 / LOADS;  // 16 loads of B in flight a lane

template <typename T, typename OutT>
__device__ __forceinline__ void dot_columns(const T* __restrict__ A, int lda, const T* __restrict__ B,
                                            OutT* __restrict__ C, float* __restrict__ partial, int N, int ldb,
                                            int ldc, int k0, int depth, int row0, int rows, int col0) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int chunks = (depth + 7) / 8;
  int lanes = 32;  // lanes to a column: no more than the slice has chunks
  while (lanes > 1 && lanes > chunks) lanes /= 2;
  const int groups = 32 / lanes;  // columns a warp covers at once, LOADS times over
  const int sub = lane % lanes, group = lane / lanes;
  const int warp_cols = BN / WARPS;
  const int warp_end = min(N, col0 + (warp + 1) * warp_cols);
  // A's rows as 16-byte chunks where its base and row stride allow (k0 is whole chunks).
  const bool a_vec = ((reinterpret_cast<unsigned long long>(A) | static_cast<unsigned long long>(lda) * sizeof(T)) & 15) == 0;
  for (int base = col0 + warp * warp_cols; base < warp_end; base += groups * LOADS) {
    float acc[LOADS][ROWS];
#pragma unroll
    for (int j = 0; j < LOADS; ++j)
#pragma unroll
      for (int r = 0; r < ROWS; ++r) acc[j][r] = 0.f;
    for (int c0 = sub; c0 < chunks; c0 += lanes * DEPTH) {
      uint4 v[DEPTH][LOADS];
#pragma unroll
      for (int u = 0; u < DEPTH; ++u) {
        const int c = c0 + u * lanes, kk = 8 * c;
#pragma unroll
        for (int j = 0; j < LOADS; ++j) {
          const int n = base + group + j * groups;
          v[u][j] = c < chunks && n < warp_end ? load_chunk(B + static_cast<long long>(n) * ldb + k0 + kk, depth - kk)
                                               : make_uint4(0, 0, 0, 0);
        }
      }
#pragma unroll
      for (int u = 0; u < DEPTH; ++u) {
        const int c = c0 + u * lanes, kk = 8 * c;
        if (c >= chunks) break;  // this lane's chunks are done (its later u too)
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          if (r >= rows) break;  // rows past M add nothing
          float a[8];
          to_float8(load_chunk_any(A + static_cast<long long>(row0 + r) * lda + k0 + kk, depth - kk, a_vec), a, T());
#pragma unroll
          for (int j = 0; j < LOADS; ++j) {
            float bf[8];
            to_float8(v[u][j], bf, T());
#pragma unroll
            for (int e = 0; e < 8; ++e) acc[j][r] = fmaf(a[e], bf[e], acc[j][r]);
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < LOADS; ++j) {
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
        for (int off = lanes / 2; off > 0; off /= 2) acc[j][r] += __shfl_xor_sync(0xffffffffu, acc[j][r], off);
      const int n = base + group + j * groups;
      if (sub != 0 || n >= warp_end) continue;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        if (r >= rows) break;
        if (gridDim.y == 1)
          zoo::store1(C + static_cast<long long>(row0 + r) * ldc + n, acc[j][r]);
        else
          partial[static_cast<long long>(row0 + r) * N + n] = acc[j][r];
      }
    }
  }
}

template <typename T, typename OutT>
__device__ __forceinline__ void gemv(const T* __restrict__ A, const T* __restrict__ B, OutT* __restrict__ C,
                                     int M, int N, int K, int lda, int ldb, int ldc, int k_per_split,
                                     float* __restrict__ partials, int* __restrict__ counters) {
  extern __shared__ float4 smem4[];
  float* const smem = reinterpret_cast<float*>(smem4);
  __shared__ int last_block;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched as a programmatic dependent (registry.dependent_launch), the blocks start while
  // the grid before finishes; nothing is read (A may be its output) or written before it has.
  // No-ops otherwise. The next grid may start its blocks now: they wait likewise.
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int splits = gridDim.y;
  const int k0 = blockIdx.y * k_per_split, k1 = min(K, k0 + k_per_split), depth = k1 - k0;
  const int row0 = blockIdx.z * ROWS, rows = min(ROWS, M - row0);
  const int col0 = blockIdx.x * BN;
  const int col = col0 + lane * 8, valid = N - col;  // valid <= 0: the lane is past N
  const long long split_stride = static_cast<long long>(M) * N;  // partials: [split][row][col]

  if constexpr (B_K_MAJOR) {
    dot_columns<T, OutT>(A, lda, B, C, partials + blockIdx.y * split_stride, N, ldb, ldc, k0, depth, row0, rows, col0);
  } else {
    // A round of a warp: LOADS rows of B, WARPS apart, from row k on (zeros past the slice or N).
    const T* const b = B + col;
    auto load_round = [&](uint4 (&v)[LOADS], int k) {
#pragma unroll
      for (int s = 0; s < LOADS; ++s) {
        const int kk = k + s * WARPS;
        v[s] = kk < k1 && valid > 0 ? load_chunk(b + static_cast<long long>(kk) * ldb, valid) : make_uint4(0, 0, 0, 0);
      }
    };
    // NOTE: the first round's loads go out before A is staged, so that the block's first DRAM
    // round trip is B's, not A's and then B's; each later round is loaded during the one before.
    uint4 cur[LOADS], next[LOADS];
    load_round(cur, k0 + warp);

    stage_a(smem, A, lda, row0, rows, k0, depth);
    __syncthreads();

    float acc[ROWS][8];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[r][e] = 0.f;

    for (int k = k0 + warp; k < k1; k += WARPS * LOADS) {
      load_round(next, k + WARPS * LOADS);
#pragma unroll
      for (int s = 0; s < LOADS; ++s) {
        const int kk = k + s * WARPS;
        if (kk >= k1) break;  // warp-uniform; As past the slice is not staged
        float bf[8];
        to_float8(cur[s], bf, T());
        const float* const a = smem + (kk - k0) * ROWS;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          const float ar = a[r];  // the same address in every lane: a broadcast
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[r][e] = fmaf(ar, bf[e], acc[r][e]);
        }
      }
#pragma unroll
      for (int s = 0; s < LOADS; ++s) cur[s] = next[s];
    }

    // The warps' sums, one row of C at a time: each warp's 32 x 8 columns into shared memory,
    // then a thread per column adds the warps' (consecutive columns: no bank conflict).
    float* const red = smem;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      if (r >= rows) break;
      __syncthreads();  // As (first row) or the row before's sums are read by now
      zoo::store8(red + warp * BN + lane * 8, acc[r]);
      __syncthreads();
      for (int c = threadIdx.x; c < BN && col0 + c < N; c += THREADS) {
        float sum = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) sum += red[w * BN + c];
        if (splits == 1)
          zoo::store1(C + static_cast<long long>(row0 + r) * ldc + col0 + c, sum);
        else
          partials[blockIdx.y * split_stride + static_cast<long long>(row0 + r) * N + col0 + c] = sum;
      }
    }
  }
  if (splits == 1) return;

  // The last block of this column block to finish adds every split's partial, in split order.
  // NOTE: one acq_rel atomic, no __threadfence (fence.sc: MEMBAR.SC.GPU, ~1 us on an H100,
  // NOTES.md "The split-K tail"): its release covers the block's partial stores that the barrier
  // ordered before it, its acquire the partials of the blocks counted in before.
  int* const count = counters + blockIdx.z * gridDim.x + blockIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    const int before = zoo::atomic_add_acq_rel_gpu(count, 1);
    last_block = before == splits - 1;
    if (last_block) *count = 0;  // left at zero for the next launch on the stream
  }
  __syncthreads();
  if (!last_block) return;
  for (int r = 0; r < rows; ++r) {
    for (int c = threadIdx.x; c < BN && col0 + c < N; c += THREADS) {
      const float* const p = partials + static_cast<long long>(row0 + r) * N + col0 + c;
      float sum = 0.f;
#pragma unroll 8
      for (int s = 0; s < splits; ++s) sum += __ldcg(p + s * split_stride);  // from L2, never a stale L1 line
      zoo::store1(C + static_cast<long long>(row0 + r) * ldc + col0 + c, sum);
    }
  }
}

}  // namespace zoo_gemv

#define ZOO_GEMV_ENTRY(name, T, OutT)                                                              \
  extern "C" __global__ void __launch_bounds__(zoo_gemv::THREADS)                                  \
      name(const T* __restrict__ A, const T* __restrict__ B, OutT* __restrict__ C, int M, int N,    \
           int K, int lda, int ldb, int ldc, int k_per_split, float* __restrict__ partials,         \
           int* __restrict__ counters) {                                                            \
    zoo_gemv::gemv<T, OutT>(A, B, C, M, N, K, lda, ldb, ldc, k_per_split, partials, counters);      \
  }

ZOO_GEMV_ENTRY(zoo_gemv_f16_f16out, half, half)
ZOO_GEMV_ENTRY(zoo_gemv_f16_f32out, half, float)
ZOO_GEMV_ENTRY(zoo_gemv_bf16_bf16out, __nv_bfloat16, __nv_bfloat16)
ZOO_GEMV_ENTRY(zoo_gemv_bf16_f32out, __nv_bfloat16, float)
