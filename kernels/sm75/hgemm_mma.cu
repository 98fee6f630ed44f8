// hgemm_mma.cu: FP16 tensor-core GEMM for Turing (sm_75, Tesla T4) with ldmatrix + mma.sync,
// the zoo's second Turing kernel beside hgemm_wmma.cu.
//
//   C[M,N] = A[M,K] @ B[K,N]; A and B fp16 row-major (row strides lda, ldb, in elements),
//   C row-major with row stride ldc, fp16 (zoo_hgemm_sm75_mma_f16out) or fp32
//   (zoo_hgemm_sm75_mma_f32out). FP32 accumulation in both. Any M, N, K >= 1, any strides.
//   Runs on CC >= 7.5: ldmatrix and mma.sync.aligned.m16n8k8 (HMMA.1688 on sm_75) exist there.
//   Built for sm_80 and newer, the k-step is 16 deep instead: one m16n8k16 (HMMA.16816) per
//   accumulator, its fragments loaded by ldmatrix straight into the registers it reads (one
//   .x4 = an m16k16 A operand, one .x4.trans = two n8 tiles' k16 B operands). Those GPUs run
//   one 16816 in about the time of one 1688 (an H100 ran this kernel at 0.65x the WMMA one
//   with k8 only; WMMA itself lowers to 16816 there). The sm_75 build, the T4's, issues
//   m16n8k8 only.
//   Compiled per config by NVRTC (zoo/cuda.py) with the tile shape as -D defines, or by nvcc
//   with the defaults below.
//
// Launch: 1-D grid of ceil(M/BM)*ceil(N/BN) blocks in grouped order, THREADS threads,
//   ZOO_SMEM_BYTES of dynamic shared memory (the host's formula, checked here by static_assert).
//
// Pipeline (no cp.async on Turing: registers stage the next K-tiles), per K-tile t, with
//   SLOTS = STAGES - 1 register slots (1 or 2) of one K-tile each:
//   1. LDG.128 of K-tile t+SLOTS into register slot t%SLOTS, in its first k-step,
//   2. BK/MMA_K k-steps of MMAs on t from shared buffer t%2; each k-step's fragments
//      (ldmatrix.x4, .x4.trans for B) load under the previous k-step's MMAs (sm_75: two k8
//      fragment sets), or after them (sm_80+: one k16 set, the other warps' MMAs cover it),
//   3. STS.128 of t+1 (register slot (t+1)%SLOTS) into buffer (t+1)%2, one __syncthreads, the
//      first fragments of t+1 load.
//   A K-tile's loads thus have SLOTS K-tiles of MMAs to land in: on an H100 one 32-deep K-tile
//   of 8 warps was too short (ncu: long-scoreboard stalls; NOTES.md), a T4's is ~3x longer.
// Shared memory: no padding. 16-byte chunks are XOR-swizzled inside each 128-byte line, so the
//   8-lane phases of the STS.128 and every 8x8 matrix an ldmatrix reads hit 32 distinct banks
//   (proved in swizzle() below; tests/test_sm75_mma.py replays it in Python).
// Tails: loads past M/N/K are zero-filled, stores past M/N are skipped; misaligned bases or
//   strides that are not multiples of 8 take element loads/stores, never a wrong answer.
//
// Run it: zoo run --kernel sm75_hgemm_mma   (docs/turing.md compares it with hgemm_wmma.cu)

#include <cuda_fp16.h>

#include "common/zoo_common.cuh"

// Config (set by the host from configs/sm75_hgemm_mma.yaml; defaults = config "128x256").
#ifndef ZOO_BM
#define ZOO_BM 128
#define ZOO_BN 256
#define ZOO_BK 32
#define ZOO_WARP_M 64
#define ZOO_WARP_N 64
#define ZOO_STAGES 2
#define ZOO_GROUP_M 8
#define ZOO_SMEM_BYTES 49152
#endif

namespace zoo_sm75_mma {

constexpr int BM = ZOO_BM, BN = ZOO_BN, BK = ZOO_BK;
constexpr int WARP_M = ZOO_WARP_M, WARP_N = ZOO_WARP_N;
constexpr int WARPS_M = BM / WARP_M, WARPS_N = BN / WARP_N;
constexpr int THREADS = 32 * WARPS_M * WARPS_N;
#if __CUDA_ARCH__ >= 800
constexpr int MMA_K = 16, A_REGS = 4, B_REGS = 2;  // m16n8k16: one HMMA.16816
#else
constexpr int MMA_K = 8, A_REGS = 2, B_REGS = 1;   // m16n8k8: one HMMA.1688 (and the host pass)
#endif
constexpr int MMA_M = 16, MMA_N = 8;
constexpr int TILES_M = WARP_M / MMA_M, TILES_N = WARP_N / MMA_N;  // mma tiles per warp
constexpr int KS = BK / MMA_K;                                     // k-steps per K-tile

constexpr int CHUNK = 8;                             // 16-byte chunk = 8 halfs
constexpr int A_STAGE = BM * BK, B_STAGE = BK * BN;  // halfs per buffer; rows are unpadded
constexpr int A_STAGE_BYTES = A_STAGE * 2, B_STAGE_BYTES = B_STAGE * 2;
constexpr int PIPE_BYTES = 2 * (A_STAGE_BYTES + B_STAGE_BYTES);  // two buffers of A and B
constexpr int EPI_LD = zoo::epi_ld(WARP_N);
constexpr int EPI_BYTES = (THREADS / 32) * zoo::EPI_ROWS * EPI_LD * 4;
constexpr int SMEM_BYTES = zoo::cmax(PIPE_BYTES, EPI_BYTES);

constexpr int A_ROW_CHUNKS = BK / CHUNK, B_ROW_CHUNKS = BN / CHUNK;
constexpr int A_CHUNKS = BM * BK / CHUNK, B_CHUNKS = BK * BN / CHUNK;
constexpr int A_PER_THREAD = A_CHUNKS / THREADS, B_PER_THREAD = B_CHUNKS / THREADS;
constexpr int A_ROWS_PER_PASS = THREADS / A_ROW_CHUNKS, B_ROWS_PER_PASS = THREADS / B_ROW_CHUNKS;

constexpr int SLOTS = ZOO_STAGES - 1;  // K-tiles in registers, loaded ahead of the one computed
static_assert(SLOTS == 1 || SLOTS == 2, "one K-tile in shared memory, one or two ahead in registers");
static_assert(BM % WARP_M == 0 && BN % WARP_N == 0, "block tile must split into warp tiles");
static_assert(WARP_M % 32 == 0, "one ldmatrix.x4 loads the A fragments of two m16 tiles");
static_assert(WARP_N % 32 == 0, "one ldmatrix.x4.trans loads the B fragments of four n8 tiles");
static_assert(BK == 32 || BK == 64, "the swizzle assumes 64- or 128-byte A rows");
static_assert(BN % 64 == 0, "B rows must be whole 128-byte lines");
static_assert(KS % 2 == 0, "fragment sets alternate per k-step and must restart at set 0");
static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "every thread copies whole chunks");
static_assert(THREADS % B_ROW_CHUNKS == 0, "a pass of the B copy covers whole rows");
static_assert(A_ROWS_PER_PASS % 8 == 0 && B_ROWS_PER_PASS % 8 == 0,
              "copy passes move by whole swizzle periods (8 rows), i.e. constant offsets");
static_assert(SMEM_BYTES == ZOO_SMEM_BYTES, "host smem formula (zoo/specs/sm75_mma.py) disagrees with the kernel");

// Element offset of (row, col) in a tile whose rows are ROW_CHUNKS 16-byte chunks wide, the
// chunk index XOR-swizzled inside each 128-byte line (same function as the sm80 kernel's):
//   >= 8 chunks per row:  phys = chunk ^ (row % 8)
//   4 chunks (64-byte rows, two per line): phys = chunk ^ ((row / 2) % 4); row % 2 is the
//   line half. Bank group (16 bytes = 4 banks) of a chunk: its position in the 128-byte line.
// Conflict-free, because every access below is a set of 8 chunks (one 8-lane phase) that are
//   - ldmatrix: 8 consecutive rows R..R+7 (R % 8 == 0) at one logical chunk c: the groups are
//     (c ^ (r % 8)) for 8 distinct r % 8, or (r % 2) * 4 + (c ^ ((r / 2) % 4)) for the 8
//     distinct (r % 2, (r / 2) % 4): 8 distinct groups either way;
//   - the STS.128 of 8 consecutive threads: one row and 8 consecutive chunks 8u..8u+7 (>= 8
//     chunks per row), or two rows 2u, 2u+1 of 4 chunks each (BK 32): again 8 groups.
template <int ROW_CHUNKS>
__host__ __device__ constexpr int swizzle(int row, int col) {
  return row * ROW_CHUNKS * CHUNK +
         ((col / CHUNK) ^ (ROW_CHUNKS >= 8 ? row % 8 : (row / 2) % 4)) * CHUNK + col % CHUNK;
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ldmatrix: lanes 8q..8q+7 give the row addresses of 8x8 matrix q (16 bytes each); register
// q receives matrix q with lane l holding row l/4, columns 2(l%4) and 2(l%4)+1 (one f16x2).
// .trans: lane l holds rows 2(l%4) and 2(l%4)+1 of column l/4 instead.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void sts128(unsigned addr, const int4& v) {
  asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}

// D = A(16x8, row) * B(8x8, col) + D; g = lane / 4, t = lane % 4 (PTX ISA, mma.m16n8k8 .f16):
//   a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1]; b = B[2t, 2t+1][g];
//   d0, d1 = D[g][2t, 2t+1], d2, d3 = D[g+8][2t, 2t+1].
// k16 (sm_80+): a2, a3 and b1 are the same at k + 8 (PTX ISA, mma.m16n8k16 .f16).
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[A_REGS], const unsigned (&b)[B_REGS]) {
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(b[0]));
#endif
}

// 8 halfs from row `row` of a row-major matrix, columns col..col+7, zero past `rows`/`cols`.
__device__ __forceinline__ int4 load_chunk(const half* __restrict__ base, long long ld, int row,
                                          int rows, int col, int cols, bool vec_ok) {
  if (row < rows && col + CHUNK <= cols && vec_ok) {
    return __ldg(reinterpret_cast<const int4*>(base + row * ld + col));
  }
  int4 out;
  half* h = reinterpret_cast<half*>(&out);
#pragma unroll
  for (int e = 0; e < CHUNK; ++e) {
    h[e] = (row < rows && col + e < cols) ? base[row * ld + col + e] : __float2half(0.f);
  }
  return out;
}

template <typename OutT>
__device__ __forceinline__ void hgemm(const half* __restrict__ A, const half* __restrict__ B,
                                      OutT* __restrict__ C, int M, int N, int K, int lda,
                                      int ldb, int ldc, int pid) {
  extern __shared__ __align__(128) unsigned char smem[];

  int tile_m, tile_n;
  zoo::grouped_tile(pid, zoo::ceil_div(M, BM), zoo::ceil_div(N, BN), ZOO_GROUP_M, tile_m,
                    tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;

  // Block-relative views: rows/cols left in this block's tile, pointers at its corner.
  const half* const A_blk = A + static_cast<long long>(m0) * lda;
  const half* const B_blk = B + n0;
  const int rows_a = M - m0, cols_b = N - n0;
  const bool a_vec = (reinterpret_cast<uintptr_t>(A) % 16 == 0) && (lda % CHUNK == 0);
  const bool b_vec = (reinterpret_cast<uintptr_t>(B) % 16 == 0) && (ldb % CHUNK == 0);
  // Interior blocks (the common case) take unpredicated 128-bit loads; edge blocks and
  // misaligned inputs take the checked path. Both are uniform across the block.
  const bool interior = a_vec && b_vec && rows_a >= BM && cols_b >= BN;

  // Per-thread addressing, computed once; in the main loop every address is a base plus a
  // constant, an XOR by a constant, or the buffer offset. Copies: thread -> (row, chunk) of
  // the tile, chunk i of a thread i whole passes (multiples of the swizzle period) below.
  const int a_row = threadIdx.x / A_ROW_CHUNKS, a_col = (threadIdx.x % A_ROW_CHUNKS) * CHUNK;
  const int b_row = threadIdx.x / B_ROW_CHUNKS, b_col = (threadIdx.x % B_ROW_CHUNKS) * CHUNK;
  const half* const a_g = A_blk + static_cast<long long>(a_row) * lda + a_col;  // + k0
  const half* const b_g = B_blk + static_cast<long long>(b_row) * ldb + b_col;  // + k0 rows
  const long long a_pass = static_cast<long long>(A_ROWS_PER_PASS) * lda;
  const long long b_pass = static_cast<long long>(B_ROWS_PER_PASS) * ldb;
  const unsigned a_base = smem_addr(smem);                  // A: 2 buffers, then B: 2 buffers
  const unsigned b_base = a_base + 2 * A_STAGE_BYTES;
  const unsigned a_st = a_base + 2 * swizzle<A_ROW_CHUNKS>(a_row, a_col);
  const unsigned b_st = b_base + 2 * swizzle<B_ROW_CHUNKS>(b_row, b_col);

  // Fragment reads, byte offsets in a buffer at k-step 0. ldmatrix: lanes 8q..8q+7 address
  // the 8 rows of matrix q; the swizzle makes k-step ks an XOR of the A offset with
  // ks * MMA_K * 2 bytes (the row part has those bits clear), and B's k rows are whole swizzle
  // periods apart (+ ks * MMA_K rows).
#if __CUDA_ARCH__ >= 800
  //   A (.x4, one m16 tile i at k16): lane l gives row l % 16 at chunk l / 16: q0 = rows 0-7 at
  //     k 0-7 (a0), q1 = rows 8-15 (a1), q2/q3 = the same at k 8-15 (a2, a3). Tile i adds 16
  //     rows, a multiple of the swizzle period: + i * 16 * BK * 2 bytes.
  //   B (.x4.trans, n8 tiles 2j, 2j+1 at k16): lane l gives k row l % 16 at the columns of
  //     tile 2j + l / 16; .trans hands lane l B[2t, 2t+1][g] of each: b0, b1 of tile 2j, then
  //     of tile 2j + 1.
  constexpr int A_TILES_PER_LDSM = 1, B_TILES_PER_LDSM = 2;
  const unsigned a_ld = 2 * swizzle<A_ROW_CHUNKS>(warp_m * WARP_M + lane % 16, (lane / 16) * CHUNK);
#else
  //   A (.x4, two m16 tiles 2p, 2p+1 at one k8): lane l gives row 32p + l of the warp tile, i.e.
  //     matrix q = l/8 is rows 8q..8q+7: q0 = tile 2p rows 0-7 (its a0), q1 = rows 8-15 (a1),
  //     q2/q3 = the same of tile 2p+1. Pair p adds 32 rows: + p * 32 * BK * 2 bytes.
  //   B (.x4.trans, four n8 tiles 4j..4j+3 at one k8): lane l gives k row l % 8 at columns of
  //     n8 tile 4j + l/8; .trans hands lane l B[2t, 2t+1][g] of each, the b operand.
  constexpr int A_TILES_PER_LDSM = 2, B_TILES_PER_LDSM = 4;
  const unsigned a_ld = 2 * swizzle<A_ROW_CHUNKS>(warp_m * WARP_M + lane, 0);
#endif
  constexpr int B_LDSM = TILES_N / B_TILES_PER_LDSM;
  const int b_krow = lane % (MMA_K == 16 ? 16 : 8), b_tile = lane / (MMA_K == 16 ? 16 : 8);
  unsigned b_ld[B_LDSM];
#pragma unroll
  for (int j = 0; j < B_LDSM; ++j)
    b_ld[j] = 2 * swizzle<B_ROW_CHUNKS>(b_krow, warp_n * WARP_N + (B_TILES_PER_LDSM * j + b_tile) * MMA_N);

  int4 a_reg[SLOTS][A_PER_THREAD], b_reg[SLOTS][B_PER_THREAD];
  // Global loads of the K-tile at k0 into register slot `slot` (compile time). `fast` (compile
  // time) says it is a whole tile inside the matrix with aligned rows; otherwise that is
  // checked, else element loads.
  auto load_tile = [&](int k0, auto fast, auto slot) {
    constexpr int S = decltype(slot)::value;
    if (decltype(fast)::value || (interior && k0 + BK <= K)) {
      const half* const a_k = a_g + k0;
      const half* const b_k = b_g + static_cast<long long>(k0) * ldb;
#pragma unroll
      for (int i = 0; i < A_PER_THREAD; ++i) a_reg[S][i] = __ldg(reinterpret_cast<const int4*>(a_k + i * a_pass));
#pragma unroll
      for (int i = 0; i < B_PER_THREAD; ++i) b_reg[S][i] = __ldg(reinterpret_cast<const int4*>(b_k + i * b_pass));
      return;
    }
    const half* const a_src = A_blk + k0;
    const half* const b_src = B_blk + static_cast<long long>(k0) * ldb;
#pragma unroll
    for (int i = 0; i < A_PER_THREAD; ++i)
      a_reg[S][i] = load_chunk(a_src, lda, a_row + i * A_ROWS_PER_PASS, rows_a, a_col, K - k0, a_vec);
#pragma unroll
    for (int i = 0; i < B_PER_THREAD; ++i)
      b_reg[S][i] = load_chunk(b_src, ldb, b_row + i * B_ROWS_PER_PASS, K - k0, b_col, cols_b, b_vec);
  };
  auto store_tile = [&](int buf, auto slot) {
    constexpr int S = decltype(slot)::value;
#pragma unroll
    for (int i = 0; i < A_PER_THREAD; ++i)
      sts128(a_st + buf * A_STAGE_BYTES + i * A_ROWS_PER_PASS * BK * 2, a_reg[S][i]);
#pragma unroll
    for (int i = 0; i < B_PER_THREAD; ++i)
      sts128(b_st + buf * B_STAGE_BYTES + i * B_ROWS_PER_PASS * BN * 2, b_reg[S][i]);
  };

  // Fragment sets: with two (k8, sm_75), k-step ks computes on set ks % 2 while ks + 1 loads
  // into the other; with one (k16 fragments, sm_80+: two sets are 64 registers, which do not
  // fit beside 128 of accumulators and two register slots), ks + 1 loads after ks's MMAs and
  // the other warps' MMAs cover it. Each ldmatrix.x4 fills 4 registers that are whole operands
  // (A_REGS per A tile, B_REGS per B tile), so no fragment is copied between registers.
  constexpr int FRAG_SETS = MMA_K == 16 ? 1 : 2;
  unsigned a_frag[FRAG_SETS][TILES_M][A_REGS], b_frag[FRAG_SETS][TILES_N][B_REGS];
  auto load_frags = [&](int set, int buf, int ks) {
    const unsigned a_addr = a_base + buf * A_STAGE_BYTES + (a_ld ^ (ks * MMA_K * 2));
    const unsigned b_addr = b_base + buf * B_STAGE_BYTES + ks * MMA_K * BN * 2;
#pragma unroll
    for (int p = 0; p < TILES_M / A_TILES_PER_LDSM; ++p) {
      unsigned r[4];
      ldmatrix_x4(r, a_addr + p * A_TILES_PER_LDSM * MMA_M * BK * 2);
#pragma unroll
      for (int q = 0; q < 4; ++q) a_frag[set][A_TILES_PER_LDSM * p + q / A_REGS][q % A_REGS] = r[q];
    }
#pragma unroll
    for (int j = 0; j < B_LDSM; ++j) {
      unsigned r[4];
      ldmatrix_x4_trans(r, b_addr + b_ld[j]);
#pragma unroll
      for (int q = 0; q < 4; ++q) b_frag[set][B_TILES_PER_LDSM * j + q / B_REGS][q % B_REGS] = r[q];
    }
  };

  float acc[TILES_M][TILES_N][4];
#pragma unroll
  for (int i = 0; i < TILES_M; ++i)
#pragma unroll
    for (int j = 0; j < TILES_N; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  const int k_tiles = zoo::ceil_div(K, BK);
  load_tile(0, zoo::Flag<false>{}, zoo::Int<0>{});
  store_tile(0, zoo::Int<0>{});
  if constexpr (SLOTS == 2) {
    if (k_tiles > 1) load_tile(BK, zoo::Flag<false>{}, zoo::Int<1>{});
  }
  __syncthreads();
  load_frags(0, 0, 0);

  int buf = 0;  // shared buffer of K-tile kt
  // One K-tile, kt % SLOTS == SLOT (compile time, so register slots are registers); `fast`
  // (compile time): K-tile kt + SLOTS is whole and interior, so its loads are straight-line
  // code the scheduler interleaves with the MMAs.
  auto k_step = [&](int kt, auto fast, auto slot) {
    constexpr int SLOT = decltype(slot)::value, NEXT_SLOT = (SLOT + 1) % SLOTS;
    const bool has_next = decltype(fast)::value || kt + 1 < k_tiles;      // K-tile kt+1 to store
    const bool has_load = decltype(fast)::value || kt + SLOTS < k_tiles;  // K-tile kt+SLOTS to load
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      const int set = FRAG_SETS == 2 ? ks & 1 : 0;  // KS is even: set 0 starts every K-tile
      const int next = FRAG_SETS == 2 ? set ^ 1 : 0;
      // Serpentine order: consecutive MMAs share an A or a B fragment (operand reuse cache).
      auto mmas = [&] {
#pragma unroll
        for (int i = 0; i < TILES_M; ++i)
#pragma unroll
          for (int jj = 0; jj < TILES_N; ++jj) {
            const int j = i % 2 ? TILES_N - 1 - jj : jj;
            mma(acc[i][j], a_frag[set][i], b_frag[set][j]);
          }
      };
      // Lands during the next SLOTS K-tiles; its slot was stored to shared memory last K-tile.
      if (ks == 0 && has_load && FRAG_SETS == 1) load_tile((kt + SLOTS) * BK, fast, zoo::Int<SLOT>{});
      if constexpr (FRAG_SETS == 1) mmas();
      if (ks == KS - 1) {
        // Buffer buf^1 was last read before the previous barrier. After this one, K-tile
        // kt+1 is readable and its first fragments load (under this k-step's MMAs, with two
        // fragment sets).
        if (has_next) store_tile(buf ^ 1, zoo::Int<NEXT_SLOT>{});
        __syncthreads();
        if (has_next) load_frags(next, buf ^ 1, 0);
      } else {
        load_frags(next, buf, ks + 1);
      }
      if (ks == 0 && has_load && FRAG_SETS == 2) load_tile((kt + SLOTS) * BK, fast, zoo::Int<SLOT>{});
      if constexpr (FRAG_SETS == 2) mmas();
    }
    buf ^= 1;
  };
  // K-tiles whose load (kt + SLOTS) is a whole interior tile, then the rest with checked loads;
  // SLOTS K-tiles per pass, so each one's register slot is known at compile time.
  const int k_fast = interior ? max(0, K / BK - SLOTS) : 0;
  int kt = 0;
  for (; kt + SLOTS <= k_fast; kt += SLOTS) {
    k_step(kt, zoo::Flag<true>{}, zoo::Int<0>{});
    if constexpr (SLOTS == 2) k_step(kt + 1, zoo::Flag<true>{}, zoo::Int<1>{});
  }
  for (; kt < k_tiles; kt += SLOTS) {
    k_step(kt, zoo::Flag<false>{}, zoo::Int<0>{});
    if constexpr (SLOTS == 2) {
      if (kt + 1 < k_tiles) k_step(kt + 1, zoo::Flag<false>{}, zoo::Int<1>{});
    }
  }
  __syncthreads();  // the buffers become epilogue scratch

  // Epilogue: per warp, one 16-row strip at a time through its fp32 scratch, then 128-bit
  // stores. Accumulator (i, j) holds rows g and g+8 (g = lane / 4), columns 2*(lane % 4) and +1
  // of its 16x8 tile.
  float* const strip = reinterpret_cast<float*>(smem) + warp * zoo::EPI_ROWS * EPI_LD;
  const bool c_vec = (reinterpret_cast<uintptr_t>(C) % 16 == 0) && (ldc % 8 == 0);
  zoo::store_mma_accumulators<WARP_N>(acc, strip, lane, C, ldc, m0 + warp_m * WARP_M, n0 + warp_n * WARP_N, M, N,
                                      c_vec);
}

}  // namespace zoo_sm75_mma

extern "C" __global__ void __launch_bounds__(zoo_sm75_mma::THREADS)
    zoo_hgemm_sm75_mma_f16out(const half* __restrict__ A, const half* __restrict__ B,
                              half* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc) {
  zoo_sm75_mma::hgemm<half>(A, B, C, M, N, K, lda, ldb, ldc, blockIdx.x);
}

extern "C" __global__ void __launch_bounds__(zoo_sm75_mma::THREADS)
    zoo_hgemm_sm75_mma_f32out(const half* __restrict__ A, const half* __restrict__ B,
                              float* __restrict__ C, int M, int N, int K, int lda, int ldb, int ldc) {
  zoo_sm75_mma::hgemm<float>(A, B, C, M, N, K, lda, ldb, ldc, blockIdx.x);
}

// Grouped launches (zoo.bmm): one block per tile of every problem in the table.
template <typename OutT>
__device__ __forceinline__ void hgemm_mma_grouped(const zoo::PointerProblem* table, int count) {
  const zoo::PointerProblem& p = zoo::problem_of(table, count, blockIdx.x);
  zoo_sm75_mma::hgemm<OutT>(reinterpret_cast<const half*>(p.A), reinterpret_cast<const half*>(p.B),
                            reinterpret_cast<OutT*>(p.C), p.M, p.N, p.K, p.lda, p.ldb, p.ldc,
                            blockIdx.x - p.tile_begin);
}
extern "C" __global__ void __launch_bounds__(zoo_sm75_mma::THREADS)
    zoo_hgemm_sm75_mma_f16out_grouped(const zoo::PointerProblem* __restrict__ table, int count) {
  hgemm_mma_grouped<half>(table, count);
}
extern "C" __global__ void __launch_bounds__(zoo_sm75_mma::THREADS)
    zoo_hgemm_sm75_mma_f32out_grouped(const zoo::PointerProblem* __restrict__ table, int count) {
  hgemm_mma_grouped<float>(table, count);
}

#ifndef __CUDACC_RTC__
// Host launchers for nvcc builds (zoo export: a shared library for ctypes); the zoo itself
// launches the kernels above through the Driver API. Each returns a cudaError_t code, 0 on
// success. A, B, C row-major and packed (lda = K, ldb = N, ldc = N); any M, N, K >= 1.
template <typename OutT, typename Kernel>
static int zoo_launch_sm75_mma(Kernel kernel, const half* A, const half* B, OutT* C, int M, int N,
                               int K, cudaStream_t stream) {
  using namespace zoo_sm75_mma;
  return zoo::launch_per_tile<BM, BN, THREADS, SMEM_BYTES>(kernel, A, B, C, M, N, K, stream);
}

extern "C" int zoo_hgemm_sm75_mma(const half* A, const half* B, float* C, int M, int N, int K,
                                  cudaStream_t stream) {
  return zoo_launch_sm75_mma(zoo_hgemm_sm75_mma_f32out, A, B, C, M, N, K, stream);
}

extern "C" int zoo_hgemm_sm75_mma_half(const half* A, const half* B, half* C, int M, int N, int K,
                                       cudaStream_t stream) {
  return zoo_launch_sm75_mma(zoo_hgemm_sm75_mma_f16out, A, B, C, M, N, K, stream);
}
#endif
