// sgemm_simt.cu: the zoo's full-precision member, an FP32 SGEMM on the CUDA cores (FFMA, no
// tensor cores), for users who cannot round their data to half precision or TF32.
//
//   C[M,N] = A[M,K] @ B[K,N]; A, B, C fp32 row-major (row strides lda, ldb, ldc, in elements).
//   Any M, N, K >= 1. Runs on CC >= 7.5 (nothing arch-specific); compiled per config by
//   NVRTC (zoo/cuda.py) with the tile shape as -D defines. zoo.mm sends fp32 inputs here
//   unless TF32 is allowed (then the sm_90a TF32 kernel takes them on Hopper).
//
// Launch: 1-D grid of ceil(M/BM)*ceil(N/BN) blocks in grouped order, 32 x (BM/WARP_M) x
//   (BN/WARP_N) threads, ZOO_SMEM_BYTES of dynamic shared memory.
//
// Tiling: each warp owns a WARP_M x WARP_N tile, its lanes a grid of LANES_M x LANES_N
//   (LANES_N = WARP_N / 8), each lane a TM x 8 register tile made of SUB_M x 2 blocks of 4 x 4:
//   rows 4*lm + {0..3} + s * WARP_M/SUB_M, columns 4*ln + {0..3} and WARP_N/2 + 4*ln + {0..3}.
//   Per k a lane reads SUB_M + 2 float4 (LDS.128) for TM x 8 FFMA, and lanes of one row group
//   read the same A float4 (a broadcast). The epilogue stores each row's 4 columns as one
//   float4: a warp writes LANES_N lanes x 16 B contiguous per row.
// Pipeline (register prefetch, as on Turing): K-tile k+1 is loaded into registers (float4,
//   LDG.128) while the FFMAs run on K-tile k from shared-memory buffer k%2; then the registers
//   go to buffer (k+1)%2; one __syncthreads per K-tile.
// Shared memory: A transposed, As[k][m], so a lane's 4 rows of A are one float4; its column is
//   XOR-swizzled by k (m ^ swz(k), a multiple of 8 below 32) so the transposing scalar stores of
//   a warp hit 32 banks while the float4 reads stay intact. Bs[k][n] as in global memory.
// Tails: loads past M, N, K are zero-filled; stores past M, N skipped; rows that are not
//   16-byte aligned fall back to element loads and stores.
//
// Run it: zoo run --auto-arch --dtype fp32   (see README.md)

#include "common/zoo_common.cuh"

// Config (set by the host from configs/sm75_sgemm_simt.yaml; defaults = config "128x128").
#ifndef ZOO_BM
#define ZOO_BM 128
#define ZOO_BN 128
#define ZOO_BK 8
#define ZOO_WARP_M 32
#define ZOO_WARP_N 64
#define ZOO_STAGES 2
#define ZOO_GROUP_M 8
#define ZOO_SMEM_BYTES 16384
#endif

namespace zoo_simt {

constexpr int BM = ZOO_BM, BN = ZOO_BN, BK = ZOO_BK;
constexpr int WARP_M = ZOO_WARP_M, WARP_N = ZOO_WARP_N;
constexpr int WARPS_N = BN / WARP_N;
constexpr int THREADS = 32 * (BM / WARP_M) * WARPS_N;
constexpr int TN = 8;                                  // a lane's register tile: TM x TN
constexpr int LANES_N = WARP_N / TN, LANES_M = 32 / LANES_N;
constexpr int TM = WARP_M / LANES_M, SUB_M = TM / 4;   // SUB_M blocks of 4 rows, WARP_M / SUB_M apart
constexpr int A_VECS = BM * BK / 4 / THREADS;          // float4 loads per thread per K-tile
constexpr int B_VECS = BK * BN / 4 / THREADS;
constexpr int SMEM_BYTES = 2 * BK * (BM + BN) * 4;     // two buffers of As and Bs
// Registers: the TM x 8 accumulators plus the fragments (the compiler double-buffers them), the
// prefetched K-tile and the addresses, which take up to REGS_BEYOND_ACC more (8x8 tiles use
// 130-168 in all; capped at 128 they spill). The launch bound gives each thread that budget:
// as many blocks per SM as it leaves room for.
#ifndef ZOO_SIMT_REGS_BEYOND_ACC
#define ZOO_SIMT_REGS_BEYOND_ACC 104
#endif
constexpr int MAX_REGS = TM * TN + ZOO_SIMT_REGS_BEYOND_ACC;
constexpr int MIN_BLOCKS = zoo::cmax(1, 65536 / (MAX_REGS * THREADS));

static_assert(WARP_N % TN == 0 && 32 % LANES_N == 0 && LANES_N <= 8, "8 columns per lane, 1-8 lanes per row");
static_assert(WARP_M % LANES_M == 0 && TM % 4 == 0 && TM <= 16, "4, 8, 12 or 16 rows per lane");
static_assert(BM % WARP_M == 0 && BN % WARP_N == 0, "the block splits into warp tiles");
static_assert(BK == 8 || BK == 16, "BK: the A swizzle below spreads 16 or 8 rows per k group");
static_assert(BM >= 32 && BM % 32 == 0, "the A swizzle flips bits 3-4 of m inside 32-row groups");
static_assert((BM * BK / 4) % THREADS == 0 && (BK * BN / 4) % THREADS == 0, "whole float4s per thread");
static_assert(SMEM_BYTES == ZOO_SMEM_BYTES, "host smem formula (zoo/specs/simt.py) disagrees with the kernel");

// Column swizzle of As for row k. A warp's transposing stores cover 32 / (BK/4) consecutive m
// for each of the BK/4 column groups k/4; XOR-ing m by a different multiple of 128/BK per
// group sends the groups to disjoint banks.
__device__ __forceinline__ constexpr int a_swizzle(int k) { return ((k / 4) % (BK / 4)) * (128 / BK); }

// src[0..3] of one row, `valid` of them inside the matrix (zero-filled past it).
__device__ __forceinline__ float4 load4(const float* src, int valid, bool vec) {
  if (vec && valid >= 4) return __ldg(reinterpret_cast<const float4*>(src));
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (valid > 0) v.x = __ldg(src);
  if (valid > 1) v.y = __ldg(src + 1);
  if (valid > 2) v.z = __ldg(src + 2);
  if (valid > 3) v.w = __ldg(src + 3);
  return v;
}

// Thread tid's share of a ROWS x (4 * CHUNKS) tile of a row-major matrix at (row0, col0):
// float4 v holds row idx / CHUNKS, columns 4 * (idx % CHUNKS) .. + 3 (idx = v * THREADS + tid),
// zero past rows x cols. `inside`: the whole tile lies in the matrix with 16-byte rows.
template <int VECS, int CHUNKS>
__device__ __forceinline__ void load_tile_part(float4 (&regs)[VECS], const float* __restrict__ src0,
                                               int ld, int rows, int cols, int row0, int col0,
                                               bool vec, bool inside) {
#pragma unroll
  for (int v = 0; v < VECS; ++v) {
    const int idx = v * THREADS + threadIdx.x, r = row0 + idx / CHUNKS, c = col0 + (idx % CHUNKS) * 4;
    const float* const src = src0 + static_cast<long long>(r) * ld + c;
    if (inside)
      regs[v] = __ldg(reinterpret_cast<const float4*>(src));
    else
      regs[v] = r < rows ? load4(src, cols - c, vec) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

__device__ __forceinline__ float comp(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

__device__ __forceinline__ void sgemm(const float* __restrict__ A, const float* __restrict__ B,
                                      float* __restrict__ C, int M, int N, int K, int lda,
                                      int ldb, int ldc, int pid) {
  extern __shared__ float4 smem4[];
  float* const As = reinterpret_cast<float*>(smem4);  // [2][BK][BM], swizzled columns
  float* const Bs = As + 2 * BK * BM;                  // [2][BK][BN]

  int tile_m, tile_n;
  zoo::grouped_tile(pid, zoo::ceil_div(M, BM), zoo::ceil_div(N, BN), ZOO_GROUP_M, tile_m, tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm0 = (warp / WARPS_N) * WARP_M, wn0 = (warp % WARPS_N) * WARP_N;
  const int lm = lane / LANES_N, ln = lane % LANES_N;
  const bool vec_a = lda % 4 == 0 && reinterpret_cast<uintptr_t>(A) % 16 == 0;
  const bool vec_b = ldb % 4 == 0 && reinterpret_cast<uintptr_t>(B) % 16 == 0;
  const bool vec_c = ldc % 4 == 0 && reinterpret_cast<uintptr_t>(C) % 16 == 0;

  // Thread tid's share of a K-tile: the float4s of load_tile_part, which store_tile places.
  // Tiles wholly inside the matrices (all but the edges) take unchecked float4 loads: the
  // branch is uniform per block and K-tile, and the loop carries no per-element predicates.
  const bool a_inside = vec_a && m0 + BM <= M, b_inside = vec_b && n0 + BN <= N;
  float4 a_regs[A_VECS], b_regs[B_VECS];
  auto load_tile = [&](int kt) {
    const int k0 = kt * BK;
    const bool k_inside = k0 + BK <= K;
    load_tile_part<A_VECS, BK / 4>(a_regs, A, lda, M, K, m0, k0, vec_a, a_inside && k_inside);
    load_tile_part<B_VECS, BN / 4>(b_regs, B, ldb, K, N, k0, n0, vec_b, b_inside && k_inside);
  };
  auto store_tile = [&](int buf) {
    float* const as = As + buf * BK * BM;
    float* const bs = Bs + buf * BK * BN;
#pragma unroll
    for (int v = 0; v < A_VECS; ++v) {
      const int idx = v * THREADS + tid, r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
#pragma unroll
      for (int i = 0; i < 4; ++i) as[(c + i) * BM + (r ^ a_swizzle(c))] = comp(a_regs[v], i);
    }
#pragma unroll
    for (int v = 0; v < B_VECS; ++v) {
      const int idx = v * THREADS + tid, r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(bs + r * BN + c) = b_regs[v];
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  int a_off[SUB_M];  // the first row of each 4-row block of this lane, and of each 4-column block
#pragma unroll
  for (int sm = 0; sm < SUB_M; ++sm) a_off[sm] = wm0 + sm * (WARP_M / SUB_M) + 4 * lm;
  const int b_off[2] = {wn0 + 4 * ln, wn0 + WARP_N / 2 + 4 * ln};
  const int k_tiles = zoo::ceil_div(K, BK);
  load_tile(0);
  store_tile(0);
  __syncthreads();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int buf = kt & 1;
    const bool more = kt + 1 < k_tiles;
    if (more) load_tile(kt + 1);  // in flight during this K-tile's FFMAs
    const float* const as = As + buf * BK * BM;
    const float* const bs = Bs + buf * BK * BN;
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int sm = 0; sm < SUB_M; ++sm) {
        const float4 av = *reinterpret_cast<const float4*>(as + k * BM + (a_off[sm] ^ a_swizzle(k)));
        a[4 * sm] = av.x, a[4 * sm + 1] = av.y, a[4 * sm + 2] = av.z, a[4 * sm + 3] = av.w;
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4 bv = *reinterpret_cast<const float4*>(bs + k * BN + b_off[h]);
        b[4 * h] = bv.x, b[4 * h + 1] = bv.y, b[4 * h + 2] = bv.z, b[4 * h + 3] = bv.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    // Buffer buf ^ 1 was last read in K-tile kt - 1, before the barrier that ended it.
    if (more) store_tile(buf ^ 1);
    __syncthreads();
  }

  // Epilogue: straight from registers, one float4 per (row, column block).
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = m0 + a_off[i / 4] + i % 4;
    if (row >= M) continue;
    float* const c_row = C + static_cast<long long>(row) * ldc;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = n0 + b_off[h];
      const float* v = &acc[i][4 * h];
      if (vec_c && col + 4 <= N) {
        *reinterpret_cast<float4*>(c_row + col) = make_float4(v[0], v[1], v[2], v[3]);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (col + e < N) c_row[col + e] = v[e];
      }
    }
  }
}

}  // namespace zoo_simt

extern "C" __global__ void __launch_bounds__(zoo_simt::THREADS, zoo_simt::MIN_BLOCKS)
    zoo_sgemm_simt(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                   int M, int N, int K, int lda, int ldb, int ldc) {
  zoo_simt::sgemm(A, B, C, M, N, K, lda, ldb, ldc, blockIdx.x);
}

// Grouped launches (zoo.bmm): one block per tile of every problem in the table.
extern "C" __global__ void __launch_bounds__(zoo_simt::THREADS, zoo_simt::MIN_BLOCKS)
    zoo_sgemm_simt_grouped(const zoo::PointerProblem* __restrict__ table, int count) {
  const zoo::PointerProblem& p = zoo::problem_of(table, count, blockIdx.x);
  zoo_simt::sgemm(reinterpret_cast<const float*>(p.A), reinterpret_cast<const float*>(p.B),
                  reinterpret_cast<float*>(p.C), p.M, p.N, p.K, p.lda, p.ldb, p.ldc,
                  blockIdx.x - p.tile_begin);
}
