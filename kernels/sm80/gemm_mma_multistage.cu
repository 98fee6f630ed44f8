// gemm_mma_multistage.cu: the zoo's Ampere kernel, a cp.async multistage tensor-core GEMM.
//
//   C[M,N] = A[M,K] @ B[K,N]; A and B row-major fp16 or bf16 (row strides lda, ldb, multiples
//   of 8 elements, 16-byte-aligned bases: the host copies other inputs), C row-major (ldc) in
//   the input dtype or fp32. FP32 accumulation. Any M, N, K >= 1.
//   Entry points: zoo_gemm_sm80_{f16,bf16}_{f16,bf16,f32}out (input dtype, output dtype).
//   Built with -DZOO_CONV: conv2d as implicit GEMM (zoo.conv2d), entries
//   zoo_conv_sm80_{f16,bf16}_{f16,bf16,f32}out(X, B, C, M, N, K, ldb, ldc, zoo::ConvGeometry).
//   A is then the NHWC input X, C % 8 == 0, 16-byte aligned: each thread's A rows (two threads
//   per row) get their output pixel once, each K-tile its filter tap once (c_pad % BK == 0:
//   one tap per K-tile), and a chunk outside the image, past C or past M is zero-filled by
//   cp.async (src-size 0). B (weights, (R*S*c_pad) x N), ring, MMAs and epilogue unchanged.
//   Small channel counts (c_pad < BK: the stem's 3 channels as 4) pack BK / c_pad filter taps
//   into a K-tile, each 4 channels of a tap one 8-byte copy, so the MMA work follows R*S*c_pad
//   and not R*S*BK (zoo/conv.py, Conv.c_pad).
//   Runs on CC >= 8.0 (cp.async, ldmatrix, mma.sync m16n8k16); compiled per config by NVRTC
//   (zoo/cuda.py) with the tile shape and STAGES as -D defines.
//
// Launch: 1-D grid of ceil(M/BM)*ceil(N/BN) blocks in grouped (L2-friendly) order, THREADS
//   threads, ZOO_SMEM_BYTES of dynamic shared memory (checked here against the host formula).
//
// Pipeline (CUTLASS "multistage"): a ring of STAGES shared-memory buffers filled by 16-byte
//   cp.async.cg copies, one commit group per K-tile. The prologue fills STAGES-1 tiles; each
//   K-step then issues the copies of tile k+STAGES-1 and computes tile k, waiting only until
//   tile k+1 has landed (cp.async.wait_group STAGES-2) at its single __syncthreads. Warp
//   fragments are double-buffered: ldmatrix for k-step kk+1 runs under the MMAs of kk, and the
//   next tile's first fragments load right after the barrier, under the last MMAs of this one.
// Shared memory: no padding; 16-byte chunks are XOR-swizzled within each 128-byte line, so
//   both the cp.async writes and the 8-row ldmatrix reads hit 32 distinct banks.
// Tails: cp.async with src-size < 16 zero-fills past M, N and K; stores past M, N are skipped.
//
// Run it: zoo run --auto-arch on CC 8.x-12.x, or zoo run --kernel sm80_gemm_mma (README.md)

#include "common/zoo_common.cuh"

#ifndef ZOO_BM
#define ZOO_BM 128
#define ZOO_BN 256
#define ZOO_BK 32
#define ZOO_WARP_M 64
#define ZOO_WARP_N 64
#define ZOO_STAGES 4
#define ZOO_GROUP_M 8
#define ZOO_SMEM_BYTES 98304
#endif

namespace zoo_sm80 {

constexpr int BM = ZOO_BM, BN = ZOO_BN, BK = ZOO_BK, STAGES = ZOO_STAGES;
constexpr int WARP_M = ZOO_WARP_M, WARP_N = ZOO_WARP_N;
constexpr int WARPS_M = BM / WARP_M, WARPS_N = BN / WARP_N;
constexpr int THREADS = 32 * WARPS_M * WARPS_N;
constexpr int MMA_M = 16, MMA_N = 8, MMA_K = 16;
constexpr int TILES_M = WARP_M / MMA_M, TILES_N = WARP_N / MMA_N;  // mma tiles per warp
constexpr int KW = BK / MMA_K;                                     // k-steps per K-tile

constexpr int CHUNK = 8;  // 16-byte chunk = 8 x 16-bit elements
constexpr int A_STAGE = BM * BK, B_STAGE = BK * BN;  // elements; rows are unpadded
constexpr int PIPE_BYTES = STAGES * (A_STAGE + B_STAGE) * 2;
constexpr int EPI_LD = zoo::epi_ld(WARP_N);
constexpr int EPI_BYTES = (THREADS / 32) * zoo::EPI_ROWS * EPI_LD * 4;
constexpr int SMEM_BYTES = zoo::cmax(PIPE_BYTES, EPI_BYTES);
constexpr int A_CHUNKS = BM * BK / CHUNK, B_CHUNKS = BK * BN / CHUNK;

static_assert(BM % WARP_M == 0 && BN % WARP_N == 0, "block tile must split into warp tiles");
static_assert(WARP_M % MMA_M == 0 && WARP_N % 16 == 0, "ldmatrix.x4.trans loads B 16 columns at a time");
static_assert(BK == 32 || BK == 64, "the swizzle assumes 64- or 128-byte A rows");
static_assert(BN % 64 == 0, "B rows must be whole 128-byte lines");
static_assert(STAGES >= 2, "the ring needs at least two stages");
static_assert(KW % 2 == 0, "fragment sets alternate per k-step and must restart at set 0");
static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "every thread copies whole chunks");
static_assert(SMEM_BYTES == ZOO_SMEM_BYTES, "host smem formula (zoo/specs/sm80_mma.py) disagrees with the kernel");

// Element offset of (row, col) in a tile whose rows are `row_chunks` 16-byte chunks wide, with
// the chunk index XOR-swizzled inside each 128-byte line. 8 consecutive rows read at one
// logical chunk (one ldmatrix 8x8) land in 8 different 16-byte bank groups:
//   rows >= 128 B (8+ chunks): chunk ^= row % 8;
//   64-byte rows (4 chunks, two rows per line): chunk ^= (row / 2) % 4, and the line half
//   (row % 2) supplies the eighth group.
template <int ROW_CHUNKS>
__device__ __forceinline__ int swizzle(int row, int col) {
  const int chunk = col / CHUNK;
  const int phys = ROW_CHUNKS >= 8 ? (chunk ^ (row % 8)) : (chunk ^ ((row / 2) % 4));
  return row * ROW_CHUNKS * CHUNK + phys * CHUNK + col % CHUNK;
}

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16-byte global -> shared copy; bytes past `src_bytes` (0..16) are zero-filled.
__device__ __forceinline__ void cp_async_16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
// 8-byte copy (through L1: .cg takes 16 bytes only); src_bytes 0 zero-fills it.
__device__ __forceinline__ void cp_async_8(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

template <typename T> struct MmaType;
template <> struct MmaType<half> { static constexpr bool bf16 = false; };
template <> struct MmaType<__nv_bfloat16> { static constexpr bool bf16 = true; };

template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  if constexpr (MmaType<T>::bf16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}

template <typename T, typename OutT>
__device__ __forceinline__ void gemm(const T* __restrict__ A, const T* __restrict__ B,
                                     OutT* __restrict__ C, int M, int N, int K, int lda, int ldb,
                                     int ldc, int pid, const zoo::ConvGeometry* conv = nullptr) {
  extern __shared__ __align__(128) unsigned char smem[];
  T* const As = reinterpret_cast<T*>(smem);
  T* const Bs = As + STAGES * A_STAGE;

  int tile_m, tile_n;
  zoo::grouped_tile(pid, zoo::ceil_div(M, BM), zoo::ceil_div(N, BN), ZOO_GROUP_M, tile_m,
                    tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;

  // Per-thread addressing, computed once: every address in the main loop is a base plus a
  // constant, an XOR or the ring-slot offset (NOTE: recomputing the swizzles per K-step cost
  // ~150 integer instructions per 64 MMAs and left the tensor pipe half idle).
  constexpr int A_ROW_CHUNKS = BK / CHUNK, B_ROW_CHUNKS = BN / CHUNK;
  constexpr int A_ROWS_PER_PASS = THREADS / A_ROW_CHUNKS, B_ROWS_PER_PASS = THREADS / B_ROW_CHUNKS;
  constexpr int A_STAGE_BYTES = A_STAGE * 2, B_STAGE_BYTES = B_STAGE * 2;
  // Copies: chunk i of a thread is i passes below chunk 0; a pass is a multiple of the
  // swizzle period (8 rows), so its smem offset is a constant step.
  static_assert(A_ROWS_PER_PASS % 8 == 0, "A copy passes keep the swizzle (period 8 rows)");
  static_assert(B_ROWS_PER_PASS % 8 == 0, "B copy passes keep the swizzle (period 8 rows)");
  const int a_row = threadIdx.x / A_ROW_CHUNKS, a_col = (threadIdx.x % A_ROW_CHUNKS) * CHUNK;
  const int b_row = threadIdx.x / B_ROW_CHUNKS, b_col = (threadIdx.x % B_ROW_CHUNKS) * CHUNK;
  const unsigned a_base = smem_addr(As), b_base = smem_addr(Bs);
  const unsigned a_st = a_base + 2 * swizzle<A_ROW_CHUNKS>(a_row, a_col);
  const unsigned b_st = b_base + 2 * swizzle<B_ROW_CHUNKS>(b_row, b_col);
#ifndef ZOO_CONV
  const T* a_src = A + static_cast<long long>(m0 + a_row) * lda + a_col;  // advance BK per tile
  const long long a_pass = static_cast<long long>(A_ROWS_PER_PASS) * lda;
#endif
  const T* b_src = B + static_cast<long long>(b_row) * ldb + n0 + b_col;  // advance BK rows
  const long long b_pass = static_cast<long long>(B_ROWS_PER_PASS) * ldb;
#ifdef ZOO_CONV
  const bool interior = n0 + BN <= N;  // B's edges; every A chunk is tested (load_conv_a)
#else
  const bool interior = m0 + BM <= M && n0 + BN <= N;
#endif

#ifdef ZOO_CONV
  // Implicit-GEMM A (A is x, NHWC; see the header). Two threads per A row, taking every other
  // chunk (tp, tp + 2, ..), so one copy instruction still reads whole 32-byte sectors of a
  // row, while a thread holds CONV_ROWS rows (NOTE: the GEMM's 4 threads per 64-byte row left
  // 4 rows per thread, whose pixels did not fit beside 250 registers of GEMM state: 255 and a
  // stack). Rows are permuted within each 8 so that an 8-thread phase of the shared-memory
  // writes still covers 32 banks: 64-byte rows {0,1,4,5} then {2,3,6,7}, 128-byte rows
  // {0,2,4,6} then {1,3,5,7}. A row's pixel is worked out once, each K-tile's filter tap once
  // per K-tile (load_tile copies K-tiles 0, 1, 2, .. in order, so `tap` steps along).
  constexpr int CONV_J = A_ROW_CHUNKS / 2;                   // chunks per thread per row
  constexpr int CONV_ROWS = A_CHUNKS / THREADS / CONV_J;     // rows per thread
  constexpr int CONV_PASS = THREADS / 2;                     // rows apart
  static_assert(CONV_ROWS >= 1 && CONV_ROWS * CONV_J * THREADS == A_CHUNKS,
                "ZOO_CONV: every thread copies whole half rows of A");
  static_assert(CONV_PASS % 8 == 0, "A copy passes keep the swizzle and the row permutation");
  const zoo::ConvGeometry& geo = *conv;
  const int c_k = threadIdx.x / 2, c_tp = threadIdx.x % 2;
  const int c_row = (c_k & ~7) | (A_ROW_CHUNKS == 4 ? (c_k & 1) | (c_k & 2) << 1 | (c_k & 4) >> 1
                                                    : (c_k & 3) << 1 | (c_k & 4) >> 2);
  // Chunk tp + 2j of a row is chunk tp XOR 2j (tp < 2), and the swizzle is an XOR of the chunk
  // index, so chunk j's offset is chunk 0's XOR 32 * j bytes.
  const unsigned c_st = 2 * swizzle<A_ROW_CHUNKS>(c_row, c_tp * CHUNK);
  const bool packed = geo.c_pad < BK;  // several taps a K-tile (load_packed_a)
  zoo::ConvRow<T> a_rows[CONV_ROWS];
#pragma unroll
  for (int i = 0; i < CONV_ROWS; ++i)
    a_rows[i] = zoo::conv_row(A, geo, m0 + c_row + i * CONV_PASS, M, packed ? 0 : c_tp * CHUNK);
  zoo::ConvTap tap{0, 0, 0, 0, 0};
  // Chunks outside the image, past C or past M are zero-filled (src-size 0, from x itself).
  auto load_conv_a = [&](int stage) {
    const unsigned a_dst = a_base + stage * A_STAGE_BYTES;
#pragma unroll
    for (int i = 0; i < CONV_ROWS; ++i) {
      const bool inside = tap.inside(a_rows[i], geo);
      const T* const src = a_rows[i].x + tap.off;
#pragma unroll
      for (int j = 0; j < CONV_J; ++j) {
        const bool in = inside && tap.c0 + (c_tp + 2 * j) * CHUNK < geo.C;
        cp_async_16(a_dst + (c_st ^ (32 * j)) + i * CONV_PASS * BK * 2, in ? src + 2 * j * CHUNK : A,
                    in ? 16 : 0);
      }
    }
    tap.next(geo, BK);
  };
  // Packed taps: a row's K-tile is BK / 4 quads of 4 channels, quad g along K being channels
  // (g % (c_pad / 4)) * 4.. of tap g / (c_pad / 4). The thread's chunks are as above, two quads
  // each; a quad's tap is worked out by division once per K-tile (shared by the thread's
  // rows). Zero past the last tap, past C or outside the image, as the weights are zero there.
  const int quad_shift = __ffs(geo.c_pad / 4) - 1;  // c_pad / 4 is a power of two
  int quad0 = 0;                                    // the next K-tile's first quad
  auto load_packed_a = [&](int stage) {
    const unsigned a_dst = a_base + stage * A_STAGE_BYTES;
#pragma unroll
    for (int j = 0; j < CONV_J; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int g = quad0 + 2 * (c_tp + 2 * j) + h, t = g >> quad_shift;
        const int c = (g - (t << quad_shift)) * 4, r = t / geo.S, s = t - r * geo.S;
        const int dh = r * geo.dil_h, dw = s * geo.dil_w;
        const long long off = (static_cast<long long>(dh) * geo.W + dw) * geo.C + c;  // as ConvTap's
        const bool tap_in = t < geo.taps && c < geo.C;
#pragma unroll
        for (int i = 0; i < CONV_ROWS; ++i) {
          const bool in = tap_in && static_cast<unsigned>(a_rows[i].h0 + dh) < static_cast<unsigned>(geo.H) &&
                          static_cast<unsigned>(a_rows[i].w0 + dw) < static_cast<unsigned>(geo.W);
          cp_async_8(a_dst + (c_st ^ (32 * j)) + 8 * h + i * CONV_PASS * BK * 2, in ? a_rows[i].x + off : A,
                     in ? 8 : 0);
        }
      }
    quad0 += BK / 4;
  };
#endif

  // Copies of K-tile `kt` into ring slot `stage`. Whole tiles inside the matrix copy 16 bytes
  // per chunk (`fast` says so at compile time, else it is checked); edge tiles copy what lies
  // inside the matrix and zero-fill the rest.
  auto load_tile = [&](int kt, int stage, auto fast) {
    const int k0 = kt * BK;
#ifndef ZOO_CONV
    const T* const a_k = a_src + k0;
#endif
    const T* const b_k = b_src + static_cast<long long>(k0) * ldb;
    const unsigned a_dst = a_st + stage * A_STAGE_BYTES, b_dst = b_st + stage * B_STAGE_BYTES;
#ifdef ZOO_CONV
    if (packed)
      load_packed_a(stage);
    else
      load_conv_a(stage);
#endif
    if (decltype(fast)::value || (interior && k0 + BK <= K)) {
#ifndef ZOO_CONV
#pragma unroll
      for (int i = 0; i < A_CHUNKS / THREADS; ++i)
        cp_async_16(a_dst + i * A_ROWS_PER_PASS * BK * 2, a_k + i * a_pass, 16);
#endif
#pragma unroll
      for (int i = 0; i < B_CHUNKS / THREADS; ++i)
        cp_async_16(b_dst + i * B_ROWS_PER_PASS * BN * 2, b_k + i * b_pass, 16);
      return;
    }
#ifndef ZOO_CONV
#pragma unroll
    for (int i = 0; i < A_CHUNKS / THREADS; ++i) {
      const int gm = m0 + a_row + i * A_ROWS_PER_PASS, gk = k0 + a_col;
      const int bytes = gm < M ? 2 * max(0, min(CHUNK, K - gk)) : 0;
      cp_async_16(a_dst + i * A_ROWS_PER_PASS * BK * 2, bytes ? a_k + i * a_pass : A, bytes);
    }
#endif
#pragma unroll
    for (int i = 0; i < B_CHUNKS / THREADS; ++i) {
      const int gk = k0 + b_row + i * B_ROWS_PER_PASS, gn = n0 + b_col;
      const int bytes = gk < K ? 2 * max(0, min(CHUNK, N - gn)) : 0;
      cp_async_16(b_dst + i * B_ROWS_PER_PASS * BN * 2, bytes ? b_k + i * b_pass : B, bytes);
    }
  };

  // Fragment reads: byte offsets of k-step 0 in slot 0. For later k-steps, A's chunk index
  // moves by 2 per k-step, which under the XOR swizzle is an XOR of the offset with 32 * kk;
  // B's rows move by 16, a multiple of the swizzle period, so its offset just adds 16 rows.
  unsigned a_ld[TILES_M], b_ld[TILES_N / 2];
#pragma unroll
  for (int i = 0; i < TILES_M; ++i)  // lanes 0-15: rows 0-15 at k 0-7; lanes 16-31: k 8-15
    a_ld[i] = 2 * swizzle<A_ROW_CHUNKS>(warp_m * WARP_M + i * MMA_M + lane % 16, (lane / 16) * 8);
#pragma unroll
  for (int j = 0; j < TILES_N / 2; ++j)  // one .trans x4 covers k 0-15 of 16 columns: two n8 tiles
    b_ld[j] = 2 * swizzle<B_ROW_CHUNKS>(lane % 16, warp_n * WARP_N + j * 16 + (lane / 16) * 8);

  unsigned a_frag[2][TILES_M][4], b_frag[2][TILES_N][2];
  auto load_frags = [&](int set, int stage, int kk) {
#pragma unroll
    for (int i = 0; i < TILES_M; ++i)
      ldmatrix_x4(a_frag[set][i], a_base + stage * A_STAGE_BYTES + (a_ld[i] ^ (kk * 32)));
#pragma unroll
    for (int j = 0; j < TILES_N / 2; ++j) {
      unsigned r[4];
      ldmatrix_x4_trans(r, b_base + stage * B_STAGE_BYTES + b_ld[j] + kk * MMA_K * BN * 2);
      b_frag[set][2 * j][0] = r[0];
      b_frag[set][2 * j][1] = r[1];
      b_frag[set][2 * j + 1][0] = r[2];
      b_frag[set][2 * j + 1][1] = r[3];
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
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_tiles) load_tile(s, s, zoo::Flag<false>{});
    cp_async_commit();  // empty groups keep the group count = tile count
  }
  cp_async_wait<STAGES - 2>();
  __syncthreads();
  load_frags(0, 0, 0);

  int stage = 0;                    // ring slot of tile kt
  int write_stage = STAGES - 1;     // ring slot of tile kt + STAGES - 1
  // One K-step; `fast` (compile-time) says its copy is a whole interior tile, so the copies
  // are straight-line code the scheduler can interleave with the MMAs.
  auto k_step = [&](int kt, auto fast) {
    const int next_stage = stage + 1 == STAGES ? 0 : stage + 1;
#pragma unroll
    for (int kk = 0; kk < KW; ++kk) {
      const int set = kk & 1;  // KW is even: set 0 starts every K-tile
      if (kk == KW - 1) {
        // Tile kt+1 must have landed and every warp must be done with the slot the next copy
        // overwrites; then its first fragments load under this k-step's MMAs.
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (kt + 1 < k_tiles) load_frags(set ^ 1, next_stage, 0);
      } else {
        load_frags(set ^ 1, stage, kk + 1);
      }
      if (kk == 0) {
        // Slot (kt-1) % STAGES was last read before the previous barrier.
        if (decltype(fast)::value || kt + STAGES - 1 < k_tiles) load_tile(kt + STAGES - 1, write_stage, fast);
        cp_async_commit();
      }
      // Serpentine order: consecutive MMAs share an A or a B fragment, so the operand reuse
      // cache saves register-file reads (ncu: 1% fewer cycles than row by row).
#pragma unroll
      for (int i = 0; i < TILES_M; ++i)
#pragma unroll
        for (int jj = 0; jj < TILES_N; ++jj) {
          const int j = i % 2 ? TILES_N - 1 - jj : jj;
          mma_16816<T>(acc[i][j], a_frag[set][i], b_frag[set][j]);
        }
    }
    stage = next_stage;
    write_stage = write_stage + 1 == STAGES ? 0 : write_stage + 1;
  };
  // K-steps whose copy is a whole tile inside the matrix, then the rest with checked copies.
  const int k_fast = interior ? max(0, K / BK - (STAGES - 1)) : 0;
  int kt = 0;
  for (; kt < k_fast; ++kt) k_step(kt, zoo::Flag<true>{});
  for (; kt < k_tiles; ++kt) k_step(kt, zoo::Flag<false>{});
  cp_async_wait<0>();
  __syncthreads();  // the ring is reused as epilogue scratch

  // Epilogue: per warp, one 16-row strip at a time. Accumulator (i, j) holds rows g and g+8
  // (g = lane / 4), columns 2*(lane % 4) and +1 of its 16x8 tile.
  float* const strip = reinterpret_cast<float*>(smem) + warp * zoo::EPI_ROWS * EPI_LD;
  const bool c_vec = (reinterpret_cast<uintptr_t>(C) % 16 == 0) && (ldc % 8 == 0);
  zoo::store_mma_accumulators<WARP_N>(acc, strip, lane, C, ldc, m0 + warp_m * WARP_M, n0 + warp_n * WARP_N, M, N,
                                      c_vec);
}

}  // namespace zoo_sm80

// Two entry points per dtype pair: one GEMM from the kernel parameters, or a grouped launch
// (zoo.bmm) with one block per tile of every problem in a table.
#define ZOO_SM80_ENTRY(NAME, T, OutT)                                                        \
  extern "C" __global__ void __launch_bounds__(zoo_sm80::THREADS)                            \
      NAME(const T* __restrict__ A, const T* __restrict__ B, OutT* __restrict__ C, int M,    \
           int N, int K, int lda, int ldb, int ldc) {                                        \
    zoo_sm80::gemm<T, OutT>(A, B, C, M, N, K, lda, ldb, ldc, blockIdx.x);                   \
  }                                                                                          \
  extern "C" __global__ void __launch_bounds__(zoo_sm80::THREADS)                            \
      NAME##_grouped(const zoo::PointerProblem* __restrict__ table, int count) {             \
    const zoo::PointerProblem& p = zoo::problem_of(table, count, blockIdx.x);                \
    zoo_sm80::gemm<T, OutT>(reinterpret_cast<const T*>(p.A), reinterpret_cast<const T*>(p.B), \
                            reinterpret_cast<OutT*>(p.C), p.M, p.N, p.K, p.lda, p.ldb, p.ldc, \
                            blockIdx.x - p.tile_begin);                                      \
  }

// A convolution (ZOO_CONV): one implicit GEMM whose A is the NHWC input X (see the header).
#define ZOO_SM80_CONV_ENTRY(NAME, T, OutT)                                                   \
  extern "C" __global__ void __launch_bounds__(zoo_sm80::THREADS)                            \
      NAME(const T* __restrict__ X, const T* __restrict__ B, OutT* __restrict__ C, int M,    \
           int N, int K, int ldb, int ldc, const __grid_constant__ zoo::ConvGeometry g) {    \
    zoo_sm80::gemm<T, OutT>(X, B, C, M, N, K, 0, ldb, ldc, blockIdx.x, &g);                 \
  }

#ifdef ZOO_CONV
ZOO_SM80_CONV_ENTRY(zoo_conv_sm80_f16_f16out, half, half)
ZOO_SM80_CONV_ENTRY(zoo_conv_sm80_f16_f32out, half, float)
ZOO_SM80_CONV_ENTRY(zoo_conv_sm80_bf16_bf16out, __nv_bfloat16, __nv_bfloat16)
ZOO_SM80_CONV_ENTRY(zoo_conv_sm80_bf16_f32out, __nv_bfloat16, float)
#else
ZOO_SM80_ENTRY(zoo_gemm_sm80_f16_f16out, half, half)
ZOO_SM80_ENTRY(zoo_gemm_sm80_f16_f32out, half, float)
ZOO_SM80_ENTRY(zoo_gemm_sm80_bf16_bf16out, __nv_bfloat16, __nv_bfloat16)
ZOO_SM80_ENTRY(zoo_gemm_sm80_bf16_f32out, __nv_bfloat16, float)
#endif

#if !defined(__CUDACC_RTC__) && !defined(ZOO_CONV)
// Host launchers for nvcc builds (zoo export: a shared library for ctypes); the zoo itself
// launches the kernels above through the Driver API. Each returns a cudaError_t code, 0 on
// success. A, B, C are row-major and packed (lda = K, ldb = N, ldc = N); cp.async copies 16
// bytes, so K and N must be multiples of 8 and A, B 16-byte aligned (else cudaErrorInvalidValue).
template <typename T, typename OutT, typename Kernel>
static int zoo_launch_sm80(Kernel kernel, const T* A, const T* B, OutT* C, int M, int N, int K,
                           cudaStream_t stream) {
  using namespace zoo_sm80;
  if (K % 8 || N % 8 || reinterpret_cast<uintptr_t>(A) % 16 || reinterpret_cast<uintptr_t>(B) % 16)
    return static_cast<int>(cudaErrorInvalidValue);  // cp.async copies 16-byte chunks of rows
  return zoo::launch_per_tile<BM, BN, THREADS, SMEM_BYTES>(kernel, A, B, C, M, N, K, stream);
}

extern "C" int zoo_gemm_sm80(const half* A, const half* B, float* C, int M, int N, int K,
                             cudaStream_t stream) {
  return zoo_launch_sm80(zoo_gemm_sm80_f16_f32out, A, B, C, M, N, K, stream);
}
extern "C" int zoo_gemm_sm80_half(const half* A, const half* B, half* C, int M, int N, int K,
                                  cudaStream_t stream) {
  return zoo_launch_sm80(zoo_gemm_sm80_f16_f16out, A, B, C, M, N, K, stream);
}
extern "C" int zoo_gemm_sm80_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M,
                                  int N, int K, cudaStream_t stream) {
  return zoo_launch_sm80(zoo_gemm_sm80_bf16_f32out, A, B, C, M, N, K, stream);
}
extern "C" int zoo_gemm_sm80_bf16_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                       __nv_bfloat16* C, int M, int N, int K, cudaStream_t stream) {
  return zoo_launch_sm80(zoo_gemm_sm80_bf16_bf16out, A, B, C, M, N, K, stream);
}
#endif
