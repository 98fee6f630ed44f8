// zoo_common.cuh: device helpers shared by every kernel of the zoo, and the host-side
// CUDA error-check macro for builds outside NVRTC (nvcc, ctypes exports).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#ifndef __CUDACC_RTC__
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>
// Checks a CUDA runtime call; on failure prints where and returns the error code, so an
// extern "C" launcher hands the cudaError_t back to its caller instead of aborting it.
#define ZOO_CUDA_CHECK(call)                                                              \
  do {                                                                                    \
    cudaError_t zoo_err_ = (call);                                                        \
    if (zoo_err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "zoo: %s failed at %s:%d: %s (%s)\n", #call, __FILE__,         \
                   __LINE__, cudaGetErrorName(zoo_err_), cudaGetErrorString(zoo_err_));    \
      return static_cast<int>(zoo_err_);                                                  \
    }                                                                                     \
  } while (0)

namespace zoo {
// The host launchers' one-time setup: a kernel's dynamic shared-memory limit is raised the
// first time it is launched, not on every launch (per process; the current device).
inline int raise_smem_limit_once(const void* kernel, int bytes) {
  static const void* done[64];
  static int count = 0;
  for (int i = 0; i < count; ++i)
    if (done[i] == kernel) return 0;
  ZOO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  if (count < 64) done[count++] = kernel;
  return 0;
}

// The host launch of a one-block-per-tile kernel (sm75, sm80) on packed row-major A, B, C:
// BM x BN tiles, THREADS threads, SMEM bytes of dynamic shared memory. Returns a cudaError_t.
template <int BM, int BN, int THREADS, int SMEM, typename Kernel, typename T, typename OutT>
int launch_per_tile(Kernel kernel, const T* A, const T* B, OutT* C, int M, int N, int K,
                    cudaStream_t stream) {
  if (M <= 0 || N <= 0 || K <= 0) return static_cast<int>(cudaErrorInvalidValue);
  const int smem_rc = raise_smem_limit_once(reinterpret_cast<const void*>(kernel), SMEM);
  if (smem_rc) return smem_rc;
  const int blocks = (M + BM - 1) / BM * ((N + BN - 1) / BN);
  kernel<<<blocks, THREADS, SMEM, stream>>>(A, B, C, M, N, K, K, N, N);
  ZOO_CUDA_CHECK(cudaGetLastError());
  return 0;
}
}  // namespace zoo
#else
typedef unsigned long long uintptr_t;
#endif

namespace zoo {

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// A compile-time bool passed as a value, to select code paths inside generic lambdas.
template <bool B>
struct Flag {
  static constexpr bool value = B;
};
// A compile-time int passed as a value (a register slot index, say), likewise.
template <int N>
struct Int {
  static constexpr int value = N;
};
__host__ __device__ constexpr int cmax(int a, int b) { return a > b ? a : b; }

// n / d for a divisor fixed for the launch: with the multiplier the host worked out (zoo/specs/
// sm90_wgmma.py, Divisor: Granlund and Montgomery's round-up method), a multiply-high, an add
// and a shift; FAST = false: a plain division (mul unused). The sm90 scheduler decodes a unit
// with four of them, which as signed divisions were ~180 dependent instructions before a
// block's first load (NOTES.md, "The start of a small GEMM").
struct Divisor {
  int d;
  unsigned mul;
  int shift;
  template <bool FAST>
  __device__ __forceinline__ int div(int n) const {  // 0 <= n < 2^31: the sum below fits 32 bits
    const unsigned u = static_cast<unsigned>(n);
    if constexpr (FAST) return static_cast<int>((__umulhi(u, mul) + u) >> shift);
    return static_cast<int>(u / static_cast<unsigned>(d));
  }
};
static_assert(sizeof(Divisor) == 12, "zoo/specs/sm90_wgmma.py packs 12-byte Divisors");
#ifndef __CUDACC_RTC__
// The multiplier for d >= 1, as Divisor.of in zoo/specs/sm90_wgmma.py works it out (for the
// launchers of an nvcc build, zoo export).
inline Divisor divisor_of(int d) {
  int shift = 0;
  while ((1ull << shift) < static_cast<unsigned long long>(d)) ++shift;  // ceil(log2 d)
  const unsigned long long mul = (1ull << (32 + shift)) / static_cast<unsigned long long>(d) - (1ull << 32) + 1;
  return {d, static_cast<unsigned>(mul), shift};
}
#endif

// Grouped ("swizzled") block order: consecutive blocks walk GROUP_M tile rows down one
// tile column before moving right, so the A rows and B columns they share stay in L2.
__device__ __forceinline__ void grouped_tile(int pid, int tiles_m, int tiles_n, int group_m,
                                             int& tile_m, int& tile_n) {
  const int per_group = group_m * tiles_n;
  const int first_m = (pid / per_group) * group_m;
  const int rows = min(tiles_m - first_m, group_m);
  tile_m = first_m + (pid % per_group) % rows;
  tile_n = (pid % per_group) / rows;
}

// ---- Grouped launches of the pointer kernels (sm75, sm80): one block per tile of every
// problem in a table; zoo/gemm.py packs the 64-byte entries (PointerProblem there).
struct alignas(16) PointerProblem {
  unsigned long long A, B, C;  // device pointers
  int M, N, K, lda, ldb, ldc;
  int tile_begin;              // first block of this problem: prefix sum of tile counts
  int pad_[3];
};
// Layout by declaration order: 3 pointers (bytes 0-23), 7 ints (24-51), padding to 64.
static_assert(sizeof(PointerProblem) == 64, "zoo/gemm.py packs 64-byte entries: 3 pointers, then 7 ints");

// Index of the last entry of a table whose `begin` field is <= x (entries sorted by begin,
// entry 0 begins at 0). It counts instead of walking, so the loads do not depend on each other
// and a cold table costs one memory round trip per 8 entries, not one per entry passed.
// (NOTE: each entry's begin sits in its own cache line; walking to entry 5 of a cold table
// was 5 dependent misses before a block's first load.)
template <typename Entry>
__device__ __forceinline__ int entry_index(const Entry* table, int count, int Entry::*begin, int x) {
  int i = 0;
#pragma unroll 8
  for (int j = 1; j < count; ++j) i += table[j].*begin <= x;
  return i;
}

// The entry whose tiles include `block`.
__device__ __forceinline__ const PointerProblem& problem_of(const PointerProblem* table, int count,
                                                           int block) {
  return table[entry_index(table, count, &PointerProblem::tile_begin, block)];
}

// Split-K's count (the sm90 kernel's units, the streaming kernel's blocks): an add with release
// semantics (the partial, stored by every thread of the warpgroup or block before a barrier, is
// visible GPU-wide first: the release is cumulative) and acquire semantics (what the others
// released is visible after it, to every thread past the next barrier). __threadfence() on both
// sides did the same with fence.sc.gpu and an L1 invalidate each.
__device__ __forceinline__ int atomic_add_acq_rel_gpu(int* p, int v) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

// ---- Epilogue: FP32 accumulators to C (fp16, bf16 or fp32), through shared memory.

constexpr int EPI_ROWS = 16;  // a warp writes its tile one 16-row strip at a time

// Row stride (floats) of a warp's fp32 strip: +8 words puts consecutive rows 8 banks apart,
// so accumulator stores of 4 rows x 8 words per half-warp hit 32 distinct banks.
__host__ __device__ constexpr int epi_ld(int warp_n) { return warp_n + 8; }

__device__ __forceinline__ void store8(float* p, const float* v) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  *reinterpret_cast<float4*>(p + 4) = make_float4(v[4], v[5], v[6], v[7]);
}
__device__ __forceinline__ void store8(half* p, const float* v) {
  int4 packed;
  half2* h2 = reinterpret_cast<half2*>(&packed);
#pragma unroll
  for (int e = 0; e < 4; ++e) h2[e] = __floats2half2_rn(v[2 * e], v[2 * e + 1]);
  *reinterpret_cast<int4*>(p) = packed;
}
__device__ __forceinline__ void store8(__nv_bfloat16* p, const float* v) {
  int4 packed;
  __nv_bfloat162* h2 = reinterpret_cast<__nv_bfloat162*>(&packed);
#pragma unroll
  for (int e = 0; e < 4; ++e) h2[e] = __floats2bfloat162_rn(v[2 * e], v[2 * e + 1]);
  *reinterpret_cast<int4*>(p) = packed;
}
__device__ __forceinline__ void store1(float* p, float v) { *p = v; }
__device__ __forceinline__ void store1(half* p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void store1(__nv_bfloat16* p, float v) { *p = __float2bfloat16_rn(v); }

// Copies one warp's 16 x WARP_N fp32 strip (shared memory, row stride epi_ld(WARP_N)) to C at
// (gm0, gn0): 8 outputs per lane-step, 128-bit stores where C's rows are 16-byte aligned,
// element stores at the N edge, nothing past M or N. Call between two __syncwarp()s.
template <int WARP_N, typename OutT>
__device__ __forceinline__ void store_strip(const float* strip, int lane, OutT* C, long long ldc,
                                            int gm0, int gn0, int M, int N, bool c_vec) {
  constexpr int LD = epi_ld(WARP_N), CHUNKS_PER_ROW = WARP_N / 8;
  static_assert((EPI_ROWS * CHUNKS_PER_ROW) % 32 == 0, "every lane takes the same number of chunks");
#pragma unroll
  for (int c = lane; c < EPI_ROWS * CHUNKS_PER_ROW; c += 32) {
    const int r = c / CHUNKS_PER_ROW, col = (c % CHUNKS_PER_ROW) * 8;
    // Each lane reads its 8 floats as two float4s; lanes 4-7 of each quarter-warp read the
    // odd one first, so a quarter-warp's first read covers all 32 banks once.
    const float4* const src = reinterpret_cast<const float4*>(strip + r * LD + col);
    const int swap = (lane >> 2) & 1;
    const float4 first = src[swap], second = src[swap ^ 1];
    const float4 lo = swap ? second : first, hi = swap ? first : second;
    const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const int gm = gm0 + r, gn = gn0 + col;
    if (gm >= M) continue;
    OutT* const dst = C + static_cast<long long>(gm) * ldc + gn;
    if (c_vec && gn + 8 <= N) {
      store8(dst, v);
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e)
        if (gn + e < N) store1(dst + e, v[e]);
    }
  }
}


// The epilogue of the mma.sync kernels (m16n8 accumulators, acc[i][j] = rows g, g + 8 and
// columns 2t, 2t + 1 of 16x8 tile (i, j) with g = lane / 4, t = lane % 4): per 16-row strip of
// the warp tile, the accumulators to the warp's fp32 scratch, then store_strip to C at
// (gm0 + 16 i, gn0).
template <int WARP_N, int TILES_M, int TILES_N, typename OutT>
__device__ __forceinline__ void store_mma_accumulators(const float (&acc)[TILES_M][TILES_N][4], float* strip,
                                                       int lane, OutT* C, long long ldc, int gm0, int gn0,
                                                       int M, int N, bool c_vec) {
  constexpr int LD = epi_ld(WARP_N);
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < TILES_M; ++i) {
#pragma unroll
    for (int j = 0; j < TILES_N; ++j) {
      *reinterpret_cast<float2*>(strip + g * LD + j * 8 + 2 * t) = make_float2(acc[i][j][0], acc[i][j][1]);
      *reinterpret_cast<float2*>(strip + (g + 8) * LD + j * 8 + 2 * t) = make_float2(acc[i][j][2], acc[i][j][3]);
    }
    __syncwarp();
    store_strip<WARP_N>(strip, lane, C, ldc, gm0 + i * 16, gn0, M, N, c_vec);
    __syncwarp();
  }
}

// ---- Convolution as implicit GEMM (ZOO_CONV builds; zoo/conv.py packs the same struct).
// x is NHWC [images][H][W][C], C a multiple of 8 (16-byte chunks never straddle two pixels),
// the weights a row-major [R*S*c_pad][K] matrix (rows (r*S + s)*c_pad + c, zero for c >= C),
// y the row-major [M = images*P*Q][K] matrix, i.e. NHWC. Row m of the implicit A is output
// pixel (n, p, q) = (m / (P*Q), m / Q % P, m % Q); its column (r*S + s)*c_pad + c reads
// x[n][p*stride_h - pad_h + r*dil_h][q*stride_w - pad_w + s*dil_w][c], zero outside the image
// or for c >= C. c_pad is a multiple of the kernel's BK, so one K-tile lies in one filter tap;
// except where a kernel packs taps (sm80, c_pad < BK: a power of two from 4, C 4 or a multiple
// of 8 no larger): a K-tile then spans BK / c_pad taps, and K = R*S*c_pad rounded up to BK.
struct ConvGeometry {
  int H, W, C, P, Q, S, c_pad, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, taps;  // taps = R*S
};

// ---- The pointer kernels' implicit-GEMM A loads (sm75, sm80 ZOO_CONV builds). A thread's A
// rows stay the same for the whole K loop, so what depends on the row alone is worked out
// once per block (ConvRow), what depends on the K-tile alone once per K-tile (ConvTap), and a
// 16-byte chunk costs a bounds test and an address add. tests/test_conv_kernels.py replays
// this arithmetic in Python against an im2col.

// One A row of a thread: output pixel m.
template <typename T>
struct ConvRow {
  const T* x;  // x at input pixel (n, h0, w0), channel `col`: read only where the tap is inside
  int h0, w0;  // the input pixel filter tap (0, 0) sees; h0 = -2^30 for rows past M, so that
               // h0 + r*dil_h is outside the image for every tap
};

template <typename T>
__device__ __forceinline__ ConvRow<T> conv_row(const T* x, const ConvGeometry& g, int m, int M, int col) {
  const int pq = g.P * g.Q, n = m / pq, pix = m - n * pq, p = pix / g.Q, q = pix - p * g.Q;
  const int h0 = p * g.stride_h - g.pad_h, w0 = q * g.stride_w - g.pad_w;
  // 64-bit: images * H * W * C may pass 2^31 (one image's pixels, H * W, may not). NOTE: this
  // order also keeps ptxas from holding w0 sign-extended to 64 bits (an 8-byte spill in the sm75
  // kernel's 128x128 build for sm_80).
  const long long at = (static_cast<long long>(n) * g.H * g.W + (h0 * g.W + w0)) * g.C + col;
  return {x + at, m < M ? h0 : -(1 << 30), w0};
}

// The filter tap and channel block of a thread's next K-tile, stepped one K-tile at a time
// (no divisions in the K loop). K-tile kt is tap r*S + s = kt / (c_pad / BK), channels
// c0 = kt % (c_pad / BK) * BK..; c_pad is a multiple of BK, so a K-tile never straddles taps.
struct ConvTap {
  int c0, s, dh, dw;  // dh = r * dil_h, dw = s * dil_w
  long long off;      // (dh * W + dw) * C + c0: the tap's element offset from a row's tap (0, 0)

  __device__ __forceinline__ void next(const ConvGeometry& g, int bk) {
    c0 += bk;
    const bool tap_end = c0 >= g.c_pad, row_end = tap_end && s + 1 == g.S;
    c0 = tap_end ? 0 : c0;
    s = row_end ? 0 : s + tap_end;
    dw = row_end ? 0 : dw + (tap_end ? g.dil_w : 0);
    dh += row_end ? g.dil_h : 0;
    off = (static_cast<long long>(dh) * g.W + dw) * g.C + c0;
  }
  // Whether this tap of `row` reads a pixel inside the image (not padding, not past M).
  template <typename T>
  __device__ __forceinline__ bool inside(const ConvRow<T>& row, const ConvGeometry& g) const {
    return static_cast<unsigned>(row.h0 + dh) < static_cast<unsigned>(g.H) &&
           static_cast<unsigned>(row.w0 + dw) < static_cast<unsigned>(g.W);
  }
};

}  // namespace zoo
