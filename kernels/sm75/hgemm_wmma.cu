// hgemm_wmma.cu: the zoo's primary kernel, FP16 tensor-core GEMM for Turing (sm_75, Tesla T4).
//
//   C[M,N] = A[M,K] @ B[K,N]; A and B fp16 row-major (row strides lda, ldb, in elements),
//   C row-major with row stride ldc, fp16 (zoo_hgemm_sm75_f16out) or fp32
//   (zoo_hgemm_sm75_f32out). FP32 accumulation in both. Any M, N, K >= 1.
//   Built with -DZOO_CONV: conv2d as implicit GEMM (zoo.conv2d), entries
//   zoo_conv_sm75_{f16,f32}out(X, B, C, M, N, K, ldb, ldc, zoo::ConvGeometry). A is then the
//   NHWC input X, C % 8 == 0, 16-byte aligned: each thread's A rows get their output pixel
//   once, each K-tile its filter tap once (c_pad % BK == 0: one tap per K-tile), and a chunk
//   outside the image, past C or past M is a zero register. B (weights, (R*S*c_pad) x N),
//   WMMA, pipeline and epilogue unchanged.
//   Runs on CC >= 7.5 (WMMA m16n16k16 -> HMMA); compiled per config by NVRTC (zoo/cuda.py)
//   with the tile shape as -D defines, or by nvcc with the defaults below.
//
// Launch: 1-D grid of ceil(M/BM)*ceil(N/BN) blocks in grouped order, THREADS threads,
//   ZOO_SMEM_BYTES of dynamic shared memory (the host's formula, checked here by static_assert).
//
// Pipeline (Turing has no cp.async, so registers are the staging buffer), per K-step k:
//   1. issue 128-bit global loads of K-tile k+S-1 into registers,
//   2. run the warps' WMMA ops on K-tile k, already in shared-memory buffer k%2,
//   3. store the registers holding K-tile k+1 into buffer (k+1)%2; one __syncthreads.
//   STAGES S = 2: every thread loads every K-tile, one K-step ahead. S = 3: the warps split
//   into two loader groups that take K-tiles in turn, so a thread's loads have two K-steps
//   to land before it stores them.
// Bank conflicts: rows are padded by 16 bytes (WMMA reads strided rows, so no XOR swizzle),
//   and the A store order interleaves rows r and r+4 so each quarter-warp covers all 32 banks.
// Tails: loads past M/N/K are zero-filled, stores past M/N are skipped; misaligned or odd
//   strides fall back to element loads/stores, never to a wrong answer.
//
// Run it: zoo run --auto-arch --kernel sm75_hgemm_wmma   (see README.md)

#include <cuda_fp16.h>
#include <mma.h>

#include "common/zoo_common.cuh"

// Config (set by the host from configs/sm75_hgemm_wmma.yaml; defaults = config "128x128").
#ifndef ZOO_BM
#define ZOO_BM 128
#define ZOO_BN 128
#define ZOO_BK 32
#define ZOO_WARP_M 64
#define ZOO_WARP_N 64
#define ZOO_STAGES 3
#define ZOO_GROUP_M 8
#define ZOO_SMEM_BYTES 37888
#endif

namespace zoo_sm75 {
using namespace nvcuda;

constexpr int BM = ZOO_BM, BN = ZOO_BN, BK = ZOO_BK;
constexpr int WARP_M = ZOO_WARP_M, WARP_N = ZOO_WARP_N;
constexpr int WARPS_M = BM / WARP_M, WARPS_N = BN / WARP_N;
constexpr int THREADS = 32 * WARPS_M * WARPS_N;
constexpr int FRAG = 16;  // WMMA m16n16k16: 4 HMMA.1688 on sm_75, 2 HMMA.16816 on sm_80+
constexpr int FRAGS_M = WARP_M / FRAG, FRAGS_N = WARP_N / FRAG;

constexpr int VEC = 8;                     // halfs per 128-bit access
constexpr int PAD = 8;                     // 16 bytes per row: shifts consecutive rows by 4 banks
constexpr int A_LD = BK + PAD;             // A tile in smem: [BM][BK + PAD]
constexpr int B_LD = BN + PAD;             // B tile in smem: [BK][BN + PAD]
constexpr int A_STAGE = BM * A_LD;         // halfs per buffer
constexpr int B_STAGE = BK * B_LD;
constexpr int PIPE_BYTES = 2 * (A_STAGE + B_STAGE) * 2;
constexpr int EPI_LD = zoo::epi_ld(WARP_N);  // fp32 strip per warp for the epilogue
constexpr int EPI_BYTES = (THREADS / 32) * zoo::EPI_ROWS * EPI_LD * 4;
constexpr int SMEM_BYTES = zoo::cmax(PIPE_BYTES, EPI_BYTES);

// STAGES = K-tiles in flight: the one in shared memory being computed, plus 1 or 2 in
// registers. With 3, the warps form two loader groups that take K-tiles in turn, each thread
// holding one K-tile's share for two K-steps (see the pipeline note in gemm below).
constexpr int STAGES = ZOO_STAGES;
constexpr int LOADERS = STAGES - 1;            // loader groups
constexpr int LOAD_THREADS = THREADS / LOADERS;  // threads that load one K-tile
constexpr int A_CHUNKS = BM * BK / VEC, B_CHUNKS = BK * BN / VEC;
constexpr int A_PER_THREAD = A_CHUNKS / LOAD_THREADS, B_PER_THREAD = B_CHUNKS / LOAD_THREADS;

static_assert(BM % WARP_M == 0 && BN % WARP_N == 0, "block tile must split into warp tiles");
static_assert(WARP_M % FRAG == 0 && WARP_N % FRAG == 0 && BK % FRAG == 0, "tiles are WMMA multiples");
static_assert(BK == 32 || BK == 64, "the A store order below is conflict-free for BK 32 or 64");
static_assert(A_CHUNKS % LOAD_THREADS == 0 && B_CHUNKS % LOAD_THREADS == 0, "every thread loads whole chunks");
static_assert(BN % (8 * VEC) == 0, "a quarter-warp stores one whole B row segment");
static_assert(STAGES == 2 || STAGES == 3, "1 K-tile in shared memory + 1 or 2 in registers");
static_assert(LOAD_THREADS % 32 == 0, "loader groups are whole warps");
static_assert(SMEM_BYTES == ZOO_SMEM_BYTES, "host smem formula (zoo/specs/sm75_wmma.py) disagrees with the kernel");

// Row and column (in halfs) of A chunk c. With BK = 32 a row is 4 chunks (64 bytes, 16 banks);
// a quarter-warp stores rows r and r + 4, which start 4 x 80 bytes = 16 banks apart, so its 8
// 16-byte stores cover all 32 banks once. With BK = 64 one row is one quarter-warp.
__device__ __forceinline__ void a_chunk_coords(int c, int& row, int& col) {
  constexpr int PER_ROW = BK / VEC;
  if (PER_ROW == 4) {
    const int lane = c % 32;
    row = (c / 32) * 8 + lane / 8 + 4 * ((lane % 8) / 4);
    col = (lane % 4) * VEC;
  } else {
    row = c / PER_ROW;
    col = (c % PER_ROW) * VEC;
  }
}

// 8 halfs from row `row` of a row-major matrix, columns col..col+7, zero past `cols`.
__device__ __forceinline__ int4 load_chunk(const half* __restrict__ base, long long ld, int row,
                                          int rows, int col, int cols, bool vec_ok) {
  if (row < rows && col + VEC <= cols && vec_ok) {
    return __ldg(reinterpret_cast<const int4*>(base + row * ld + col));
  }
  int4 out;
  half* h = reinterpret_cast<half*>(&out);
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    h[e] = (row < rows && col + e < cols) ? base[row * ld + col + e] : __float2half(0.f);
  }
  return out;
}

template <typename OutT>
__device__ __forceinline__ void hgemm(const half* __restrict__ A, const half* __restrict__ B,
                                      OutT* __restrict__ C, int M, int N, int K, int lda,
                                      int ldb, int ldc, int pid,
                                      const zoo::ConvGeometry* conv = nullptr) {
  extern __shared__ __align__(128) unsigned char smem[];
  half* const As = reinterpret_cast<half*>(smem);
  half* const Bs = As + 2 * A_STAGE;

  int tile_m, tile_n;
  zoo::grouped_tile(pid, zoo::ceil_div(M, BM), zoo::ceil_div(N, BN), ZOO_GROUP_M, tile_m,
                    tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const int warp = threadIdx.x / 32;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;

  // Block-relative views: rows/cols left in this block's tile, pointers at its corner.
#ifdef ZOO_CONV
  const half* const B_blk = B + n0;
  const int cols_b = N - n0;
#else
  const half* const A_blk = A + static_cast<long long>(m0) * lda;
  const half* const B_blk = B + n0;
  const int rows_a = M - m0, cols_b = N - n0;
  const bool a_vec = (reinterpret_cast<uintptr_t>(A) % 16 == 0) && (lda % VEC == 0);
#endif
  const bool b_vec = (reinterpret_cast<uintptr_t>(B) % 16 == 0) && (ldb % VEC == 0);

  // Interior blocks (the common case) take unpredicated 128-bit loads; edge blocks and
  // misaligned inputs take the checked path. Both branches are uniform across the block.
#ifdef ZOO_CONV
  const bool interior = b_vec && cols_b >= BN;  // B's; every A chunk is tested (load_conv_a)
#else
  const bool interior = a_vec && b_vec && rows_a >= BM && cols_b >= BN;
#endif

  // Per-thread addressing, computed once: chunk i of a thread lies a fixed number of rows
  // below chunk 0 (A: LOAD_THREADS/4 rows, B: LOAD_THREADS/(BN/8) rows), so every address in
  // the main loop is a base plus a constant. (NOTE: rebuilding them per K-step cost as many
  // integer instructions as there were MMAs.)
  constexpr int A_ROWS_PER_PASS = LOAD_THREADS / (BK / VEC);  // a_chunk_coords keeps this step
  constexpr int B_ROWS_PER_PASS = LOAD_THREADS / (BN / VEC);
  // (LOADERS == 1 is spelled out here and below so the 2-stage build keeps no group tests:
  // the compiler does not know threadIdx.x < THREADS.)
  const int lt = LOADERS == 1 ? threadIdx.x : threadIdx.x % LOAD_THREADS;  // index in the group
  const int group = LOADERS == 1 ? 0 : threadIdx.x / LOAD_THREADS;
  int a_row0, a_col0;
  a_chunk_coords(lt, a_row0, a_col0);
  const int b_row0 = lt / (BN / VEC), b_col0 = (lt % (BN / VEC)) * VEC;
#ifndef ZOO_CONV
  const half* const a_g = A_blk + static_cast<long long>(a_row0) * lda + a_col0;
#endif
  const half* const b_g = B_blk + static_cast<long long>(b_row0) * ldb + b_col0;
#ifndef ZOO_CONV
  const long long a_pass = static_cast<long long>(A_ROWS_PER_PASS) * lda;
#endif
  const long long b_pass = static_cast<long long>(B_ROWS_PER_PASS) * ldb;
#ifndef ZOO_CONV
  half* const a_s = As + a_row0 * A_LD + a_col0;
#endif
  half* const b_s = Bs + b_row0 * B_LD + b_col0;

  int4 a_reg[A_PER_THREAD], b_reg[B_PER_THREAD];

#ifdef ZOO_CONV
  // Implicit-GEMM A (A is x, NHWC; see the header). Where a thread loads a whole row's
  // chunks or more, it takes whole rows (lt, lt + LOAD_THREADS, ..), else the GEMM's chunks;
  // either way a quarter-warp's stores still cover 32 banks (rows 80 or 144 bytes apart), and
  // a thread holds CONV_ROWS rows (NOTE: the GEMM's chunks would be 8 rows per thread at
  // 128x128, 32 registers of pixels beside 252 of GEMM state; even 2 rows spilled until `tap`
  // became block-uniform). A row's pixel is worked out once; `tap` is the filter tap of the
  // K-tile loaded next, stepped once per K-step (block-uniform, so it lives in uniform
  // registers; only the prologue's differs per loader group).
  constexpr int PER_ROW = BK / VEC;
  constexpr int CONV_J = A_PER_THREAD >= PER_ROW ? PER_ROW : 1;  // chunks per thread per row
  constexpr int CONV_ROWS = A_PER_THREAD / CONV_J;
  constexpr int CONV_STEP = CONV_J > 1 ? LOAD_THREADS : A_ROWS_PER_PASS;  // rows apart
  static_assert(CONV_ROWS * CONV_J == A_PER_THREAD, "ZOO_CONV: every thread loads whole rows or single chunks");
  const zoo::ConvGeometry& geo = *conv;
  const int c_row0 = CONV_J > 1 ? lt : a_row0, c_col0 = CONV_J > 1 ? 0 : a_col0;
  half* const a_s = As + c_row0 * A_LD + c_col0;
  zoo::ConvRow<half> a_rows[CONV_ROWS];
#pragma unroll
  for (int i = 0; i < CONV_ROWS; ++i)
    a_rows[i] = zoo::conv_row(A, geo, m0 + c_row0 + i * CONV_STEP, M, c_col0);
  zoo::ConvTap tap{0, 0, 0, 0, 0};
  // Register a_reg[i * CONV_J + j]: row i, chunk j; zero outside the image, past C or past M.
  auto load_conv_a = [&]() {
#pragma unroll
    for (int i = 0; i < CONV_ROWS; ++i) {
      const bool inside = tap.inside(a_rows[i], geo);
      const half* const src = a_rows[i].x + tap.off;
#pragma unroll
      for (int j = 0; j < CONV_J; ++j) {
        int4 v = make_int4(0, 0, 0, 0);
        if (inside && tap.c0 + c_col0 + j * VEC < geo.C) v = __ldg(reinterpret_cast<const int4*>(src + j * VEC));
        a_reg[i * CONV_J + j] = v;
      }
    }
  };
#endif

  auto load_tile = [&](int k0) {
#ifdef ZOO_CONV
    load_conv_a();
#endif
    if (interior && k0 + BK <= K) {
#ifndef ZOO_CONV
      const half* const a_k = a_g + k0;
#endif
      const half* const b_k = b_g + static_cast<long long>(k0) * ldb;
#ifndef ZOO_CONV
#pragma unroll
      for (int i = 0; i < A_PER_THREAD; ++i) a_reg[i] = __ldg(reinterpret_cast<const int4*>(a_k + i * a_pass));
#endif
#pragma unroll
      for (int i = 0; i < B_PER_THREAD; ++i) b_reg[i] = __ldg(reinterpret_cast<const int4*>(b_k + i * b_pass));
      return;
    }
#ifndef ZOO_CONV
    const half* const a_src = A_blk + k0;
#endif
    const half* const b_src = B_blk + static_cast<long long>(k0) * ldb;
#ifndef ZOO_CONV
#pragma unroll
    for (int i = 0; i < A_PER_THREAD; ++i) {
      int row, col;
      a_chunk_coords(lt + i * LOAD_THREADS, row, col);
      a_reg[i] = load_chunk(a_src, lda, row, rows_a, col, K - k0, a_vec);
    }
#endif
#pragma unroll
    for (int i = 0; i < B_PER_THREAD; ++i) {
      const int c = lt + i * LOAD_THREADS;
      const int row = c / (BN / VEC), col = (c % (BN / VEC)) * VEC;
      b_reg[i] = load_chunk(b_src, ldb, row, K - k0, col, cols_b, b_vec);
    }
  };
  auto store_tile = [&](int buf) {
#pragma unroll
    for (int i = 0; i < A_PER_THREAD; ++i)
#ifdef ZOO_CONV  // row i / CONV_J, chunk i % CONV_J
      *reinterpret_cast<int4*>(a_s + buf * A_STAGE + (i / CONV_J) * CONV_STEP * A_LD + (i % CONV_J) * VEC) = a_reg[i];
#else
      *reinterpret_cast<int4*>(a_s + buf * A_STAGE + i * A_ROWS_PER_PASS * A_LD) = a_reg[i];
#endif
#pragma unroll
    for (int i = 0; i < B_PER_THREAD; ++i)
      *reinterpret_cast<int4*>(b_s + buf * B_STAGE + i * B_ROWS_PER_PASS * B_LD) = b_reg[i];
  };

  wmma::fragment<wmma::accumulator, FRAG, FRAG, FRAG, float> acc[FRAGS_M][FRAGS_N];
#pragma unroll
  for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j) wmma::fill_fragment(acc[i][j], 0.f);

  // K-tile t is loaded by group t % LOADERS into its registers during K-step t - LOADERS,
  // stored to shared buffer t % 2 at the end of K-step t - 1, computed in K-step t. With two
  // groups a thread's loads have two K-steps to land, and no thread issues new loads between
  // its loads and its stores, so the stores wait for those loads alone. (NOTE: two register
  // buffers per thread gained nothing: ptxas gives every global load one scoreboard, so the
  // stores of K-tile t+1 also waited for the loads of t+2 issued just before.)
  const int k_tiles = zoo::ceil_div(K, BK);
#ifdef ZOO_CONV
  if (group) tap.next(geo, BK);  // K-tile 1 (LOADERS == 2)
#endif
  if (group < k_tiles) load_tile(group * BK);
#ifdef ZOO_CONV
  tap = zoo::ConvTap{0, 0, 0, 0, 0};
#pragma unroll
  for (int t = 0; t < LOADERS; ++t) tap.next(geo, BK);  // K-tile LOADERS, the loop's first
#endif
  if (group == 0) store_tile(0);
  __syncthreads();

  for (int kt = 0; kt < k_tiles; ++kt) {
    const int buf = kt & 1;
    // This group stored its K-tile at the end of the last step: its registers are free.
    if ((LOADERS == 1 || group == kt % LOADERS) && kt + LOADERS < k_tiles)
      load_tile((kt + LOADERS) * BK);  // in flight during the math below
#ifdef ZOO_CONV
    tap.next(geo, BK);  // K-tile kt + 1 + LOADERS
#endif

    const half* const a_warp = As + buf * A_STAGE + warp_m * WARP_M * A_LD;
    const half* const b_warp = Bs + buf * B_STAGE + warp_n * WARP_N;
#pragma unroll
    for (int kk = 0; kk < BK; kk += FRAG) {
      wmma::fragment<wmma::matrix_a, FRAG, FRAG, FRAG, half, wmma::row_major> a_frag[FRAGS_M];
      wmma::fragment<wmma::matrix_b, FRAG, FRAG, FRAG, half, wmma::row_major> b_frag[FRAGS_N];
#pragma unroll
      for (int i = 0; i < FRAGS_M; ++i)
        wmma::load_matrix_sync(a_frag[i], a_warp + i * FRAG * A_LD + kk, A_LD);
#pragma unroll
      for (int j = 0; j < FRAGS_N; ++j)
        wmma::load_matrix_sync(b_frag[j], b_warp + kk * B_LD + j * FRAG, B_LD);
#pragma unroll
      for (int i = 0; i < FRAGS_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAGS_N; ++j) wmma::mma_sync(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
    }

    // Buffer buf^1 was last read in step kt-1, which the previous barrier closed.
    if ((LOADERS == 1 || group == (kt + 1) % LOADERS) && kt + 1 < k_tiles) store_tile(buf ^ 1);
    __syncthreads();
  }

  // Epilogue: one 16-row strip of the warp tile at a time through the warp's own fp32
  // scratch (the pipeline buffers are free after the last barrier), then 128-bit stores.
  float* const scratch = reinterpret_cast<float*>(smem) + warp * zoo::EPI_ROWS * EPI_LD;
  const bool c_vec = (reinterpret_cast<uintptr_t>(C) % 16 == 0) && (ldc % VEC == 0);
#pragma unroll
  for (int i = 0; i < FRAGS_M; ++i) {
#pragma unroll
    for (int j = 0; j < FRAGS_N; ++j)
      wmma::store_matrix_sync(scratch + j * FRAG, acc[i][j], EPI_LD, wmma::mem_row_major);
    __syncwarp();
    zoo::store_strip<WARP_N>(scratch, threadIdx.x % 32, C, ldc, m0 + warp_m * WARP_M + i * FRAG,
                             n0 + warp_n * WARP_N, M, N, c_vec);
    __syncwarp();
  }
}

}  // namespace zoo_sm75

#ifdef ZOO_CONV
// A convolution (ZOO_CONV): one implicit GEMM whose A is the NHWC input X (see the header).
extern "C" __global__ void __launch_bounds__(zoo_sm75::THREADS)
    zoo_conv_sm75_f16out(const half* __restrict__ X, const half* __restrict__ B, half* __restrict__ C,
                         int M, int N, int K, int ldb, int ldc, const __grid_constant__ zoo::ConvGeometry g) {
  zoo_sm75::hgemm<half>(X, B, C, M, N, K, 0, ldb, ldc, blockIdx.x, &g);
}

extern "C" __global__ void __launch_bounds__(zoo_sm75::THREADS)
    zoo_conv_sm75_f32out(const half* __restrict__ X, const half* __restrict__ B, float* __restrict__ C,
                         int M, int N, int K, int ldb, int ldc, const __grid_constant__ zoo::ConvGeometry g) {
  zoo_sm75::hgemm<float>(X, B, C, M, N, K, 0, ldb, ldc, blockIdx.x, &g);
}
#else
extern "C" __global__ void __launch_bounds__(zoo_sm75::THREADS)
    zoo_hgemm_sm75_f16out(const half* __restrict__ A, const half* __restrict__ B,
                          half* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc) {
  zoo_sm75::hgemm<half>(A, B, C, M, N, K, lda, ldb, ldc, blockIdx.x);
}

extern "C" __global__ void __launch_bounds__(zoo_sm75::THREADS)
    zoo_hgemm_sm75_f32out(const half* __restrict__ A, const half* __restrict__ B,
                          float* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc) {
  zoo_sm75::hgemm<float>(A, B, C, M, N, K, lda, ldb, ldc, blockIdx.x);
}

// Grouped launches (zoo.bmm): one block per tile of every problem in the table.
template <typename OutT>
__device__ __forceinline__ void hgemm_grouped(const zoo::PointerProblem* table, int count) {
  const zoo::PointerProblem& p = zoo::problem_of(table, count, blockIdx.x);
  zoo_sm75::hgemm<OutT>(reinterpret_cast<const half*>(p.A), reinterpret_cast<const half*>(p.B),
                        reinterpret_cast<OutT*>(p.C), p.M, p.N, p.K, p.lda, p.ldb, p.ldc,
                        blockIdx.x - p.tile_begin);
}
extern "C" __global__ void __launch_bounds__(zoo_sm75::THREADS)
    zoo_hgemm_sm75_f16out_grouped(const zoo::PointerProblem* __restrict__ table, int count) {
  hgemm_grouped<half>(table, count);
}
extern "C" __global__ void __launch_bounds__(zoo_sm75::THREADS)
    zoo_hgemm_sm75_f32out_grouped(const zoo::PointerProblem* __restrict__ table, int count) {
  hgemm_grouped<float>(table, count);
}
#endif  // ZOO_CONV

#if !defined(__CUDACC_RTC__) && !defined(ZOO_CONV)
// Host launchers for nvcc builds (shared library / ctypes); the zoo itself launches the
// kernels above through the Driver API. Each returns a cudaError_t code, 0 on success.
template <typename OutT, typename Kernel>
static int zoo_launch_sm75(Kernel kernel, const half* A, const half* B, OutT* C, int M, int N,
                           int K, cudaStream_t stream) {
  using namespace zoo_sm75;
  return zoo::launch_per_tile<BM, BN, THREADS, SMEM_BYTES>(kernel, A, B, C, M, N, K, stream);
}

extern "C" int zoo_hgemm_sm75(const half* A, const half* B, float* C, int M, int N, int K,
                              cudaStream_t stream) {
  return zoo_launch_sm75(zoo_hgemm_sm75_f32out, A, B, C, M, N, K, stream);
}

extern "C" int zoo_hgemm_sm75_half(const half* A, const half* B, half* C, int M, int N, int K,
                                   cudaStream_t stream) {
  return zoo_launch_sm75(zoo_hgemm_sm75_f16out, A, B, C, M, N, K, stream);
}
#endif
