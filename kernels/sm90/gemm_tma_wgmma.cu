// gemm_tma_wgmma.cu: the zoo's Hopper kernel, a warp-specialized TMA + WGMMA GEMM (sm_90a).
//
//   C[M,N] = A[M,K] @ B[K,N]; A and B row-major fp16 or bf16, read through TMA tensor maps
//   (row strides multiples of 16 bytes, 16-byte-aligned bases: the host copies other inputs);
//   C row-major (ldc) in the input dtype or fp32. FP32 accumulation. Any M, N, K >= 1.
//   Entry points: zoo_gemm_sm90_{f16,bf16}_{f16,bf16,f32}out (input dtype, output dtype).
//   Built with -DZOO_TF32: fp32 A, B and C through wgmma .tf32 (entry zoo_gemm_sm90_tf32).
//   wgmma takes tf32 operands from shared memory only K-major, and row-major B is N-major, so
//   this variant computes C^T = B^T A^T: each consumer loads its 64 columns of the B stage
//   into registers (conflict-free 32-bit loads, rounded to tf32) as wgmma's A operand and
//   reads the A stage (K-major) as wgmma's B operand; the epilogue writes the transposed
//   accumulators into the same swizzled C boxes. Same producer, ring, scheduler and split-K.
//   Built with -DZOO_SWAP_AB (configs with swap_ab: 1, for skinny M and small problems): the
//   same C^T = B^T A^T with fp16 / bf16 operands both from shared memory as loaded: a B box
//   (64 columns, N-major) is wgmma's A, read transposed; the A stage's rows (K-major) are its
//   B, whose N (8-64) runs along C's rows; so a tile may be 16 rows of C. Same transposed
//   epilogue, with C boxes of a consumer's rows when fewer than 64.
//   Built with -DZOO_CONV: a convolution as implicit GEMM (zoo.conv2d; entries
//   zoo_conv_sm90_{f16,bf16}_{f16,bf16,f32}out). tmap_a is then a 4-D im2col map of the NHWC
//   input (channels per pixel BK, pixels per column BM, the conv stride as element strides,
//   the padding as its bounding box): K-tile kt of a tile is filter tap kt / c_blocks, channels
//   (kt % c_blocks) * BK.., one TMA load at the tile's first output pixel with the tap's
//   offsets; the hardware walks rows and images and zero-fills the padding. B is the weights
//   as they lie channels-last, K_out x R x S x C: a 4-D tiled map, one box of BN output
//   channels x BK input channels per K-tile at the tap, stored K-major (BN rows x 128 B, like
//   A) and read by wgmma without the transpose (ZOO_B_K_MAJOR); channels past C read as zero.
//   C is the NHWC output. Same ring, scheduler, split-K and epilogue; no clusters.
//   Built with -DZOO_B_K_MAJOR alone (a GEMM whose B is given column-major, as B^T (N, K)
//   row-major: torch.nn.Linear's x @ W^T reads W in place): tmap_b is then (N rows, K cols),
//   one box of BN / CLUSTER_M rows x 128 B per K-tile and CTA, stored K-major like A and read
//   by wgmma without the transpose (swap-AB tiles read it as their A, also untransposed).
//   Built with -DZOO_FP8 (with ZOO_B_K_MAJOR; zoo.scaled_mm, entries zoo_scaled_sm90_e4m3_
//   {bf16,f16,f32}out): e4m3 A row-major and B column-major, both K-major as FP8 wgmma needs,
//   a K-tile of 128 one-byte elements (four wgmma k32 steps), float32 dequantization scales
//   (Scales: per tensor or row applied after the main loop). With ZOO_FP8_PROMOTE each K-tile's
//   sums are added into the fp32 accumulators once done, the consumers (two, or three of 64
//   rows each) issuing their K-tiles' MMAs in turns (the swap tiles' without: TURNS); with
//   ZOO_FP8_BLOCK as well (the blockwise recipe's build) each K-tile's sums are scaled as they
//   are added, its scales staged beside its stage. With ZOO_SWAP_AB (per tensor and per row)
//   the tiles are C^T ones as above, both operands K-major.
//   Built with -DZOO_A_M_MAJOR (A given column-major, as A^T (K, M) row-major: the weight
//   gradient dY^T X of a linear layer reads dY in place): tmap_a is then (K rows, M cols), BM/64
//   boxes of BK / CLUSTER_N rows x 128 B per K-tile and CTA, stored M-major like B's N-major
//   boxes and read by wgmma transposed. Not with swap-AB, TF32 or the convolution. With
//   -DZOO_ROW_SUMS as well it also sums A's rows over K into `row_sums` (a linear layer's bias
//   gradient, from dY^T): a wgmma m64n8k16 of A against a tile of ones beside each k16 step.
//   Runs on CC 9.0 only (wgmma, setmaxnreg: compiled for sm_90a by NVRTC in zoo/cuda.py, with
//   the tile shape and STAGES as -D defines).
//
// Launch (persistent): as many blocks of 128 x (1 + CONSUMERS) threads as fit the GPU at once
//   (one per SM; zoo.bmm's streams mode: each grid its share of them), in clusters of
//   CLUSTER_M x CLUSTER_N CTAs (a launch attribute, 1-D: rank r is tile r % CLUSTER_M in M,
//   r / CLUSTER_M in N), ZOO_SMEM_BYTES of dynamic shared memory.
//   Cluster c walks stacks of CLUSTER_M x CLUSTER_N tiles c, c + clusters, ... in grouped
//   (L2-friendly) order; each CTA of the cluster takes one tile of the stack.
//   Tensor maps, all 128-byte swizzled, zero fill outside the tensor, 3-D with `batch`
//   matrices (1 for one GEMM): tmap_a (M rows, K cols), box BM / CLUSTER_N rows x 128 B;
//   tmap_b (K rows, N cols), box BK / CLUSTER_M rows x 128 B; tmap_c (M rows, N cols), box
//   64 x 128 B, used when c_tma != 0 (C's base, row stride and row length 16-byte multiples:
//   TMA writes whole 16-byte chunks), else C is stored directly (matrix i at C + i * c_batch).
//   The batch's units follow one another.
//   splits > 1 (split-K, for grids under one wave): each tile's K-tiles are cut into `splits`
//   units; workspace holds their fp32 partials and counters (zeroed, left zeroed; one int per tile and
//   consumer) counts them in; the last unit of a tile reduces and stores it.
//   stream_k > 0 (stream-K, ZOO_STREAM_K builds, splits 1, no clusters: grids over one wave
//   whose last wave would leave SMs idle): the stream_k tiles after the last whole wave are
//   laid end to end along K and cut into one run of K-tiles per CTA (Scheduler); their parts
//   reduce as split-K's units do, with partials per CTA and run (2 x gridDim.x x BM x BN
//   floats) and a counter per tail tile and consumer.
//   independent != 0 (zoo.bmm's streams mode: a GEMM after another on the same stream, launched
//   as its programmatic dependent): starts without waiting for the grid before it, and waits
//   for it before exiting (see gemm()).
//   layout (UnitLayout): how unit numbers decode, with the host's multipliers for its divisions.
//
// Pipeline (warp-specialized): warpgroup 0 is the producer: one thread issues the TMA loads of
//   each K-tile into a ring of STAGES shared-memory buffers, after waiting on that stage's
//   "empty" mbarrier; the loads complete on its "full" mbarrier (expect_tx bytes). Warpgroups
//   1..CONSUMERS each own a WG_M x WG_N slice of the tile (WG_M = 64, or 128: two wgmma row
//   blocks): they wait on "full", issue BK/16 x WG_M/64 wgmma m64nWG_Nk16 from shared-memory
//   descriptors, and release the stage ("empty") once the next K-tile's MMAs are in flight
//   (wgmma.wait_group 1), so the tensor cores never wait on a release. setmaxnreg moves
//   registers from the producer to the consumers' accumulators.
//   TF32: a commit group per k8 wgmma, each with its own 4 fragment registers; a fragment is
//   reloaded only once the same step of the previous K-tile is done (wgmma.wait_group 3).
//   The producer runs ahead into the next tile while the consumers store this one: registers
//   to swizzled shared memory, then a TMA store that drains under the next tile's MMAs.
//   Ping-pong (ZOO_PINGPONG, configs with pingpong: 1): the two consumers each own whole tiles
//   (WG_M = 128: two wgmma m64 row blocks) and take the CTA's tiles in turn, handing the
//   tensor cores over with a pair of named barriers, so one's epilogue runs under the other's
//   MMAs; each skips the other's K-tiles in the ring.
//   In a cluster, CTAs in the same row of tiles share A and CTAs in the same column share B:
//   each producer loads 1/CLUSTER_N of the A tile's rows and multicasts them along its row,
//   and 1/CLUSTER_M of every B box's K rows, multicast along its column. A stage is free only
//   when the consumers of all the cluster's CTAs have released it (each consumer warp arrives
//   on every CTA's "empty" barrier, one lane per CTA).
// Shared memory: A stage = BM rows x 128 B (K-major, 128B swizzle); B stage = BN/BOX_COLS boxes
//   of BK rows x 128 B (N-major, 128B swizzle; wgmma reads it transposed, or for TF32 the
//   consumers load it into registers); then per consumer two
//   64-row C boxes; then the mbarriers and the consumers' split-K flags. Stages and boxes are 1024-byte aligned, as the swizzle
//   atom (8 rows x 128 B) requires.
//
// Run it: zoo run --auto-arch on an H100/H200, or zoo run --kernel sm90_gemm_tma_wgmma

#include "common/zoo_common.cuh"
#include "sm90/sm90_ptx.cuh"

#ifndef ZOO_BM
#define ZOO_BM 128
#define ZOO_BN 256
#define ZOO_BK 64
#define ZOO_WARP_M 64
#define ZOO_WARP_N 256
#define ZOO_STAGES 4
#define ZOO_GROUP_M 8
#define ZOO_CLUSTER_M 2
#define ZOO_SMEM_BYTES 230480
#endif
#ifndef ZOO_CLUSTER_N
#define ZOO_CLUSTER_N 1
#endif
#ifndef ZOO_PINGPONG
#define ZOO_PINGPONG 0
#endif
#ifndef ZOO_SWAP_AB
#define ZOO_SWAP_AB 0
#endif
#ifndef ZOO_STREAM_K
#define ZOO_STREAM_K 0
#endif

namespace zoo_sm90 {

constexpr int BM = ZOO_BM, BN = ZOO_BN, BK = ZOO_BK, STAGES = ZOO_STAGES;
constexpr int WG_M = ZOO_WARP_M, WG_N = ZOO_WARP_N;  // one consumer warpgroup's slice of C
// ZOO_TF32 builds the fp32-input variant: wgmma .tf32 takes only K-major operands from shared
// memory, and B (K, N) row-major is N-major, so the consumers compute the transposed tile,
// C^T = B^T A^T: B's slice comes from registers as wgmma's A operand (any layout may be loaded
// into registers), A's tile is wgmma's K-major B operand. A consumer's slice is then all BM
// rows x 64 columns of C: wgmma m64 runs along N and its N along M.
#ifdef ZOO_TF32
constexpr bool TF32 = true;
#else
constexpr bool TF32 = false;
#endif
// ZOO_SWAP_AB (configs with swap_ab: 1) computes the transposed tile too, for skinny M and
// small problems: wgmma's M (64, fixed) runs along C's columns and its N (8-64) along C's
// rows, so a tile may be as few as 8 rows of C. Both operands stay in shared memory as the
// producer loads them: the B stage (N-major boxes) is wgmma's A, read transposed; the A
// stage (K-major rows) is wgmma's B. A consumer's slice is WG_M rows x 64 columns of C.
constexpr bool SWAP_AB = ZOO_SWAP_AB != 0;
constexpr bool TRANSPOSED = TF32 || SWAP_AB;        // accumulator rows are C columns
// ZOO_FP8 builds a scaled GEMM (zoo.scaled_mm): e4m3 A and B, both K-major (B given
// column-major, ZOO_B_K_MAJOR: FP8 wgmma reads no transposed operand), wgmma k32 steps, and
// float32 dequantization scales (Scales) applied to the fp32 accumulators. With
// ZOO_FP8_PROMOTE (configs with promote: 1) each K-tile's MMAs go into a second set of
// accumulators, added into the first in fp32 once they are done: wgmma keeps fewer bits than
// fp32 as it adds FP8 products, which over a long K loses precision (DeepSeek-V3's
// "promotion"); the blockwise recipe's scales are applied there, per K-tile.
#ifdef ZOO_FP8
constexpr bool FP8 = true;
#else
constexpr bool FP8 = false;
#endif
#ifndef ZOO_FP8_PROMOTE
#define ZOO_FP8_PROMOTE 0
#endif
constexpr bool PROMOTE = ZOO_FP8_PROMOTE != 0;
// ZOO_FP8_BLOCK (configs with block_scales: 1, promoted): the blockwise recipe's build. Each
// K-tile's scales are staged in a slot beside its stage and multiply its sums as they are
// promoted. A build of its own: the other recipes' promotion is a plain add, no scale read or
// multiply on the consumers' critical path (NOTES.md, "The FP8 consumers' critical path").
#ifdef ZOO_FP8_BLOCK
constexpr bool BLOCK_SCALES = true;
#else
constexpr bool BLOCK_SCALES = false;
#endif
constexpr int IN_BYTES = TF32 ? 4 : FP8 ? 1 : 2;    // fp32 inputs, e4m3, or fp16 / bf16
constexpr int MMA_K = 32 / IN_BYTES;                // one wgmma covers 32 bytes of K (k16 / k8 / k32)
constexpr int MMA_N = TRANSPOSED ? WG_M : WG_N;     // wgmma N: C columns, or C rows transposed
constexpr int ACC_REGS = MMA_N / 2;                 // fp32 accumulators of one wgmma (64 x MMA_N / 128)
constexpr int CLUSTER_M = ZOO_CLUSTER_M;  // CTAs of a cluster along M (a column of tiles, sharing B)
constexpr int CLUSTER_N = ZOO_CLUSTER_N;  // and along N (a row of tiles, sharing A)
constexpr int CLUSTER = CLUSTER_M * CLUSTER_N;
// Ping-pong (ZOO_PINGPONG): two consumer warpgroups each own whole tiles and take the CTA's
// tiles in turn, so one's epilogue and the start of its next tile run under the other's
// MMAs. Else the consumers split every tile between them (cooperative).
constexpr bool PINGPONG = ZOO_PINGPONG != 0;
// ZOO_STREAM_K (configs with stream_k: 1): the scheduler can spread the tiles past the last
// whole wave over every CTA along K (Scheduler). Built only where asked: its arithmetic needs
// registers the 192-accumulator consumers do not have.
constexpr bool STREAM_K = ZOO_STREAM_K != 0 && CLUSTER == 1;
constexpr int M_SUBS = TRANSPOSED ? 1 : WG_M / 64;  // wgmma m64 row blocks of a consumer's slice
constexpr int SLICES = (BM / WG_M) * (BN / WG_N);   // consumer slices per tile
constexpr int CONSUMERS = PINGPONG ? 2 : SLICES;
constexpr int WG_THREADS = 128;
constexpr int THREADS = WG_THREADS * (1 + CONSUMERS);

constexpr int SWIZZLE_BYTES = 128;                 // one swizzled row: 64 16-bit or 32 fp32 elements
constexpr int BOX_COLS = SWIZZLE_BYTES / IN_BYTES;
constexpr int ATOM_BYTES = 8 * SWIZZLE_BYTES;      // swizzle atom: 8 rows x 128 B
constexpr int A_STAGE_BYTES = BM * BK * IN_BYTES;
#ifdef ZOO_A_M_MAJOR
constexpr bool A_M_MAJOR = true;
#else
constexpr bool A_M_MAJOR = false;
#endif
// A's stage as wgmma reads it: K-major, BM rows of 128 B (a k16 step 32 bytes along a row, a
// 64-row block 64 rows on); or M-major, BM/64 boxes of BK rows x 128 B (a k16 step 16 rows, a
// 64-row block one box on).
constexpr int A_BOX_BYTES = BK * SWIZZLE_BYTES;
constexpr int A_K_STEP_BYTES = A_M_MAJOR ? MMA_K * SWIZZLE_BYTES : 32;
constexpr int A_BLOCK_BYTES = A_M_MAJOR ? A_BOX_BYTES : 64 * SWIZZLE_BYTES;
constexpr int B_BOX_BYTES = BK * BOX_COLS * IN_BYTES;  // one TMA box of B: BK rows x 128 B
constexpr int B_STAGE_BYTES = BK * BN * IN_BYTES;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int BARRIER_BYTES = 2 * STAGES * 8;      // a full and an empty mbarrier per stage
constexpr int ALIGN_SLACK = 1024;                  // dynamic smem is rounded up to 1024 B here
// Epilogue staging: per consumer, EPI_BOXES boxes of 64 rows x 128 B of C (128B swizzle),
// written from registers and stored by TMA while the consumer goes on to its next tile.
constexpr int EPI_BOX_BYTES = 64 * SWIZZLE_BYTES;
constexpr int EPI_BOXES = 2;
constexpr int EPI_BYTES = CONSUMERS * EPI_BOXES * EPI_BOX_BYTES;
constexpr int SPLIT_FLAG_BYTES = 16;               // per consumer: "this unit finishes its tile"
// ZOO_ROW_SUMS builds also sum A's rows over K (a Linear's bias gradient when A is dY^T: the
// weight gradient dW = dY^T X; cuBLASLt's BGRADB epilogue): one more wgmma m64n8k16 a k16 step
// and row block, A against a 16 x 8 tile of ones (256 B on a 128-byte boundary, after the
// flags), 4 accumulators a row block. A build of its own: the same wgmma under a branch in the
// K loop broke ptxas's batching of the main wgmmas (NOTES.md, "The bias gradient in the dW kernel").
#ifdef ZOO_ROW_SUMS
constexpr bool ROW_SUMS = true;
#else
constexpr bool ROW_SUMS = false;
#endif
constexpr int ONES_BYTES = ROW_SUMS ? 256 + 128 : 0;  // zoo/specs/sm90_wgmma.py: SM90_ROW_SUMS_BYTES
// The blockwise build stages a K-tile's scales in shared memory beside its stage, a slot a
// stage: sa of the tile's BM rows, then sb of the (at most 4) 128-wide column blocks it spans.
// zoo/specs/sm90_wgmma.py: fp8_scale_bytes.
constexpr int SCALE_SLOT_BYTES = BM * 4 + 16;
constexpr int SCALE_BYTES = BLOCK_SCALES ? STAGES * SCALE_SLOT_BYTES : 0;
constexpr int SMEM_BYTES =
    ALIGN_SLACK + STAGES * STAGE_BYTES + EPI_BYTES + BARRIER_BYTES + SPLIT_FLAG_BYTES + ONES_BYTES + SCALE_BYTES;
constexpr int K_STEPS = BK / MMA_K;                // wgmmas per K-tile
static_assert(!ROW_SUMS || (A_M_MAJOR && !PROMOTE && M_SUBS * ACC_REGS <= 128),
              "row sums: A column-major, at most 128 accumulators a thread (more spilled)");

// Registers: the block is launched at 65536 / THREADS per thread (a multiple of 8); the
// producer drops to PRODUCER_REGS and the consumers take what it frees (setmaxnreg counts
// in multiples of 8, at most 256). Three promoted consumers need 160 each (their sums twice,
// 128, and 32 more): the producer keeps 32 (at 24 its block-scale copies spilled).
constexpr int LAUNCH_REGS = (65536 / THREADS) / 8 * 8;
constexpr int PROMOTED_THREE = PROMOTE && CONSUMERS == 3;
constexpr int PRODUCER_REGS = PROMOTED_THREE ? 32 : 40;
constexpr int CONSUMER_REGS_FREE =
    ((LAUNCH_REGS * THREADS - PRODUCER_REGS * WG_THREADS) / (CONSUMERS * WG_THREADS)) / 8 * 8;
constexpr int CONSUMER_REGS = CONSUMER_REGS_FREE < 256 ? CONSUMER_REGS_FREE : 256;
// The three-consumer blockwise build keeps accumulator element i in register slot(i) = i ^ 1.
// A K-tile's sum of element i lies in wgmma's register base + i, and split-K's vector stores
// keep the slots in aligned registers, so in element order a sum and its accumulator share a
// register bank (parity) and the promotion's FFMA (sum x scale + accumulator) read three
// registers of one bank on every other add. Crossed, 192x128pb ran 1.5-2.3% faster on every
// shape it takes; 128x128pb ran 1% faster at 4096 rows and 1.5-2% slower on grids of one or two
// waves, so it and the other builds keep element order (H200; NOTES.md, "Register banks in the
// promotion, measured"). Read through slot() where that build reads its accumulators by
// element: its promotion and its C stores (TMA and plain). Split-K's partials go out and back
// in slot order alike; its scales are applied per K-tile, and it has no swap-AB layout.
__device__ __forceinline__ constexpr int slot(int i) { return PROMOTED_THREE && BLOCK_SCALES ? i ^ 1 : i; }
// EARLY_ISSUE (two promoted consumers of 64-column slices, tiles not swapped): a consumer
// issues its next unit's first K-tile before this unit's epilogue, so its own MMAs, and the
// other consumer's after them, run under the epilogue: the promoted sums (acc) it stores are
// not the registers those MMAs write (part). Without it a consumer's epilogue has only the
// other's MMAs of one K-tile to hide under (NOTES.md, "The FP8 consumers' critical path",
// Next). Slices of 192 columns would spill: their two sets take 192 of the 232 registers.
// Measured on an H200 against the same kernel without it (NOTES.md, "The epilogue under the
// next MMAs: an early issue"; "The early issue, peeled"): 128x128p ran 0.5-1.4 points of
// torch faster on every shape of 1024+ rows; the blockwise 128x128pb ran 0.2-2.5 points
// slower, so its build leaves it out.
constexpr bool TWO_64x128_SLICES = CONSUMERS == 2 && !TRANSPOSED && M_SUBS * ACC_REGS <= 64;
constexpr bool EARLY_ISSUE = PROMOTE && !BLOCK_SCALES && TWO_64x128_SLICES;
// HOLD_SCALES (two consumers of 64 x 128 slices, tiles not swapped): a unit's per-row and
// per-column scales are loaded into registers as it starts and held through its K loop (34
// registers a thread), not read after its last MMAs: the L1 prefetch did not keep those
// loads off the epilogue (NOTES.md, "Scales held through the K loop"). 192-column slices
// have no registers to spare (their two sets take 192 of 232).
constexpr bool HOLD_SCALES = FP8 && !BLOCK_SCALES && TWO_64x128_SLICES;
// TURNS: the promoted consumers issue their K-tiles' MMAs in turns (consume()), but for the
// swap tiles. Without turns ptxas keeps the swap tiles' ring stage and descriptors in vector
// registers (an R2UR before each wgmma: the build check lets these builds have it), and so
// 16x128sp, 32x128sp and 64x128sp ran 1-7% faster on all 24 shapes and recipes measured; with
// the barriers kept under a guard that never held, which put them back in uniform registers,
// the 16- and 32-row tiles ran as fast as with turns (NOTES.md, "Swap tiles free of turns,
// measured: kept").
constexpr bool TURNS = PROMOTE && !SWAP_AB;

static_assert(BK == BOX_COLS, "a K-tile of A is one 128-byte swizzled row per M row");
static_assert((TRANSPOSED ? WG_N : WG_M) == 64 || (!TRANSPOSED && WG_M == 128),
              "a consumer warpgroup issues wgmma m64 (or two row blocks of it)");
static_assert(!PINGPONG || SLICES == 1, "ping-pong consumers own whole tiles");
static_assert(SWAP_AB ? ((MMA_N == 8 || MMA_N == 16 || MMA_N == 32 || MMA_N == 64) && !TF32 && !PINGPONG)
                      : (MMA_N == 64 || MMA_N == 128 || MMA_N == 192 || MMA_N == 256),
              "wgmma wrappers exist for N = 64, 128, 192 and 256 (swap-AB: 8, 16, 32, 64; cooperative consumers)");
#ifdef ZOO_B_K_MAJOR
static_assert(!TF32, "the TF32 build loads B's fragments from an N-major stage");
#ifdef ZOO_CONV
static_assert(!SWAP_AB, "a convolution's tiles are not swapped");
#endif
#endif
// Epilogue chunk: C rows per staged box (the host's C map box rows, zoo/specs/sm90_wgmma.py).
constexpr int C_BOX_ROWS = TRANSPOSED && WG_M < 64 ? WG_M : 64;
#ifdef ZOO_B_K_MAJOR
constexpr bool B_ROWS_K_MAJOR = true;   // B^T's rows: one box of BN rows, no 128-byte column boxes
#else
constexpr bool B_ROWS_K_MAJOR = false;
#endif
static_assert(BM % WG_M == 0 && BN % WG_N == 0 && (B_ROWS_K_MAJOR || BN % BOX_COLS == 0), "tile must split");
static_assert(BM <= 256 && BK <= 256, "TMA box dimensions are at most 256");
static_assert(CONSUMERS >= 1 && CONSUMERS <= 3, "one producer and 1-3 consumer warpgroups");
static_assert(CONSUMERS * 4 <= SPLIT_FLAG_BYTES, "a split-K flag per consumer");
static_assert(STAGES >= 2, "the ring needs at least two stages");
constexpr int A_SHARE_ROWS = BM / CLUSTER_N;  // the rows of A's tile one CTA loads and multicasts
constexpr int B_SHARE_ROWS = BK / CLUSTER_M;  // the K rows of each B box one CTA loads and multicasts
static_assert(CLUSTER >= 1 && CLUSTER <= 8, "portable cluster sizes: at most 8 CTAs");
static_assert(A_SHARE_ROWS % 8 == 0 && B_SHARE_ROWS % 8 == 0 && BM % CLUSTER_N == 0 && BK % CLUSTER_M == 0,
              "each CTA's share of a box is whole swizzle atoms (8 rows), so the shares tile the box");
#ifdef ZOO_B_K_MAJOR
static_assert(BN % CLUSTER_M == 0 && (BN / CLUSTER_M) % 8 == 0, "each CTA multicasts whole 8-row atoms of B^T");
#endif
static_assert(!A_M_MAJOR || (!SWAP_AB && !TF32 && BM % 64 == 0 && BK % CLUSTER_N == 0 && (BK / CLUSTER_N) % 8 == 0),
              "A column-major: whole 64-column boxes read by wgmma transposed, whole 8-row atoms per CTA");
#if defined(ZOO_A_M_MAJOR) && defined(ZOO_CONV)
#error "a convolution's A is its im2col, K-major"
#endif
static_assert(A_STAGE_BYTES % ATOM_BYTES == 0 && B_BOX_BYTES % ATOM_BYTES == 0,
              "stages and boxes must keep 1024-byte alignment");
static_assert(CONSUMER_REGS >= (PROMOTE ? 2 : 1) * M_SUBS * ACC_REGS + (TF32 ? 56 : PROMOTED_THREE ? 32 : 40),
              "the accumulators must fit the consumers' registers");
#ifdef ZOO_FP8
#if !defined(ZOO_B_K_MAJOR) || defined(ZOO_A_M_MAJOR) || defined(ZOO_CONV) || defined(ZOO_TF32)
#error "FP8 wgmma reads A and B K-major: a row-major A and a column-major B (ZOO_B_K_MAJOR)"
#endif
#endif
static_assert(!PROMOTE || (FP8 && !PINGPONG && CONSUMERS >= 2),
              "promotion is an FP8 build's, for two or three cooperative consumers taking turns");
static_assert(!BLOCK_SCALES || (PROMOTE && !TRANSPOSED && BM % 32 == 0),
              "the blockwise recipe's scales are applied as each K-tile is promoted, staged by whole warps of rows");
static_assert(SMEM_BYTES == ZOO_SMEM_BYTES, "host smem formula (zoo/specs/sm90_wgmma.py) disagrees with the kernel");

// Stores two adjacent outputs (row, col), (row, col + 1); `pair` when both are inside N and
// C's element pairs are aligned for one vector store.
__device__ __forceinline__ void store2(float* p, float x, float y, bool pair, bool second) {
  if (pair) {
    *reinterpret_cast<float2*>(p) = make_float2(x, y);
  } else {
    p[0] = x;
    if (second) p[1] = y;
  }
}
__device__ __forceinline__ void store2(half* p, float x, float y, bool pair, bool second) {
  if (pair) {
    *reinterpret_cast<half2*>(p) = __floats2half2_rn(x, y);
  } else {
    p[0] = __float2half_rn(x);
    if (second) p[1] = __float2half_rn(y);
  }
}
__device__ __forceinline__ void store2(__nv_bfloat16* p, float x, float y, bool pair, bool second) {
  if (pair) {
    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y);
  } else {
    p[0] = __float2bfloat16_rn(x);
    if (second) p[1] = __float2bfloat16_rn(y);
  }
}

// Two adjacent outputs into shared memory (fp32 C), or packed into one word (16-bit C, for
// stmatrix).
__device__ __forceinline__ void st_shared_pair(unsigned addr, float x, float y, float*) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(x), "f"(y) : "memory");
}
__device__ __forceinline__ unsigned pack_pair(float x, float y, half*) {
  const half2 v = __floats2half2_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&v);
}
__device__ __forceinline__ unsigned pack_pair(float x, float y, __nv_bfloat16*) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(x, y);
  return *reinterpret_cast<const unsigned*>(&v);
}
__device__ __forceinline__ void stmatrix_x4(unsigned addr, const unsigned (&v)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v[0]),
               "r"(v[1]), "r"(v[2]), "r"(v[3]) : "memory");
}

// The bias of C columns col, col + 1 (zero past the last column, or with no bias), added in
// fp32 before C's rounding, as cuBLASLt's bias epilogue. The stores add it as they go: added
// to the accumulators all at once, it made wide slices spill. Slices of more than 128
// accumulators a thread have no registers to spare for it (their loads spill): they ignore
// the argument and the host adds the bias after (zoo/specs/sm90_wgmma.py, bias_epilogue).
constexpr bool BIAS_EPILOGUE = M_SUBS * ACC_REGS <= 128;
template <typename OutT>
__device__ __forceinline__ float2 bias_pair(const OutT* bias, int col, int cols) {
  if (!BIAS_EPILOGUE || bias == nullptr) return make_float2(0.f, 0.f);
  return make_float2(col < cols ? static_cast<float>(bias[col]) : 0.f,
                     col + 1 < cols ? static_cast<float>(bias[col + 1]) : 0.f);
}

// The two-consumer blockwise builds stage a slice whose boxes fill the ring (64 x 128 of 16-bit
// C) whole, between one pair of barriers rather than a pair a box: 128x128pb ran 1.3-4%
// faster so on the square and LLM shapes (H200, three calls). 128x128p ran 0.5-1% slower with
// it, 192x128pb about 1% at 8192^3: the others keep a pair a box (NOTES.md, "The FP8
// epilogue, three ways").
constexpr bool SHORT_EPILOGUE = BLOCK_SCALES && CONSUMERS == 2;

// Epilogue through TMA: one 64-row block of the warpgroup's slice (64 x WG_N) goes out one
// box (64 rows x 128 B, 128B-swizzled so that the 8 rows a store writes hit 32 banks) at a time,
// the boxes taken in turn from the consumer's EPI_BOXES: a box waits only until the store
// out of it EPI_BOXES boxes ago has read it (`staged` counts the consumer's boxes across
// tiles), and the last stores overlap the next tile's MMAs. The leader thread issues the
// stores. No bounds checks: TMA skips what falls outside C.
template <typename OutT>
__device__ __forceinline__ void store_tile_tma(const float (&acc)[ACC_REGS], unsigned buf,
                                               const TensorMap* tmap_c, int row0, int col0, int matrix,
                                               int consumer, int warp, int lane, unsigned& staged,
                                               const OutT* bias, int cols) {
  constexpr int BOX_COLS_C = SWIZZLE_BYTES / sizeof(OutT);
  static_assert(WG_N % BOX_COLS_C == 0, "the slice splits into whole boxes");
  const bool leader = threadIdx.x % WG_THREADS == 0;
  // SHORT_EPILOGUE, one row block whose boxes fill the ring: all of them between one pair of
  // barriers (the stores out of them a tile ago have long read them), committed once.
  constexpr int BOXES = WG_N / BOX_COLS_C;
  constexpr bool ALL_AT_ONCE = SHORT_EPILOGUE && BOXES == EPI_BOXES && M_SUBS == 1;
  if (ALL_AT_ONCE) {
    if (leader) bulk_wait_read<0>();
    named_barrier(1 + consumer, WG_THREADS);
  }
#pragma unroll
  for (int q = 0; q < WG_N / BOX_COLS_C; ++q, ++staged) {
    const unsigned box = buf + (ALL_AT_ONCE ? q : staged % EPI_BOXES) * EPI_BOX_BYTES;
    // The box's bias, loaded whole ahead of the stores: loaded as they went, each load waited
    // behind the store before it (their asm is a compiler barrier).
    float2 b[BOX_COLS_C / 8];
#pragma unroll
    for (int jj = 0; jj < BOX_COLS_C / 8; ++jj)
      b[jj] = bias_pair(bias, col0 + q * BOX_COLS_C + jj * 8 + 2 * (lane % 4), cols);
    if (!ALL_AT_ONCE) {
      if (leader) bulk_wait_read<EPI_BOXES - 1>();
      named_barrier(1 + consumer, WG_THREADS);
    }
    if constexpr (sizeof(OutT) == 2) {
      // 16-bit C: the accumulator layout is stmatrix's, so one stmatrix x4 writes four 8 x 8
      // matrices, column groups jj and jj + 1 at rows h = 0 and 1 (a quarter of the stores of
      // 4-byte pairs). Lane l gives the address of row l % 8 of matrix l / 8; a matrix row is
      // one 16-byte chunk of the swizzled box.
      const int m = lane / 8, r = warp * 16 + 8 * (m % 2) + lane % 8;
#pragma unroll
      for (int jj = 0; jj < BOX_COLS_C / 8; jj += 2) {
        const int j = q * (BOX_COLS_C / 8) + jj;  // the accumulators' 8-column group
        unsigned v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          v[i] = pack_pair(acc[slot(4 * (j + i / 2) + 2 * (i % 2))] + b[jj + i / 2].x,
                           acc[slot(4 * (j + i / 2) + 2 * (i % 2) + 1)] + b[jj + i / 2].y, static_cast<OutT*>(nullptr));
        stmatrix_x4(box + r * SWIZZLE_BYTES + (((jj + m / 2) ^ (r % 8)) << 4), v);
      }
    } else {  // fp32 C: pairs of 8 bytes
      const int swz = (lane / 4) % 8;  // row % 8 of both rows this thread writes
#pragma unroll
      for (int jj = 0; jj < BOX_COLS_C / 8; ++jj) {
        const int j = q * (BOX_COLS_C / 8) + jj;  // the accumulators' 8-column group
        const int byte = (jj * 8 + 2 * (lane % 4)) * static_cast<int>(sizeof(OutT));
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = warp * 16 + lane / 4 + 8 * h;
          const unsigned addr = box + r * SWIZZLE_BYTES + ((((byte >> 4) ^ swz) << 4) | (byte & 15));
          st_shared_pair(addr, acc[slot(4 * j + 2 * h)] + b[jj].x, acc[slot(4 * j + 2 * h + 1)] + b[jj].y,
                         static_cast<OutT*>(nullptr));
        }
      }
    }
    if (!ALL_AT_ONCE) {
      fence_proxy_async();
      named_barrier(1 + consumer, WG_THREADS);
      if (leader) {
        tma_store_3d(tmap_c, box, col0 + q * BOX_COLS_C, row0, matrix);
        bulk_commit();
      }
    }
  }
  if (ALL_AT_ONCE) {
    fence_proxy_async();
    named_barrier(1 + consumer, WG_THREADS);
    if (leader) {
#pragma unroll
      for (int q = 0; q < BOXES; ++q) tma_store_3d(tmap_c, buf + q * EPI_BOX_BYTES, col0 + q * BOX_COLS_C, row0, matrix);
      bulk_commit();
    }
  }
}

// One GEMM, or a batch of same-shape GEMMs, of a launch: its tensor maps (kernel parameters,
// or a table entry in global memory; their third dimension walks the batch), C, the elements
// from one C matrix to the next, the sizes, and the first unit of work it owns.
template <typename OutT>
struct Gemm {
  const TensorMap *a, *b, *c;
  OutT* C;
  long long c_batch;
  int M, N, K, ldc, c_tma, unit_begin;
  const zoo::ConvGeometry* conv;  // ZOO_CONV builds: the convolution whose im2col is A
};

// A scaled GEMM's float32 dequantization scales (ZOO_FP8): C = (A sa)(B sb) (+ bias), as
// torch._scaled_mm. Per tensor or per row / column: sa(row) = a[row * a_row], sb(col) =
// b[col * b_col] (strides 0 for one scale), applied to the accumulators after the main loop.
// Blockwise (the BLOCK_SCALES build: 1 x 128 blocks of A, 128 x 128 of B; a K-tile is one
// 128-wide K block): sa(row, kt) = a[row * a_row + kt * a_k], sb(kt, col) = b[kt * b_k +
// (col / 128) * b_col], applied to each K-tile's promoted sum.
struct Scales {
  const float* a;
  const float* b;
  int a_row, a_k, b_k, b_col;
};
constexpr int SCALE_BLOCK = 128;  // the blockwise recipe's blocks along K and N
static_assert(!FP8 || BK == SCALE_BLOCK, "an FP8 K-tile is one 128-byte row: one K block of the scales");
// A blockwise consumer's columns lie in one block of B's scales, or (a slice wider than a
// divisor of the block, e.g. 192) in two: the slice starts on a multiple of SCALE_STEP columns
// inside a block, 0 or SCALE_STEP, so the columns of its first SPLIT (8-column groups) take
// the first block's scale and the rest the second's.
constexpr int gcd_int(int a, int b) { return b == 0 ? a : gcd_int(b, a % b); }
constexpr int SCALE_STEP = gcd_int(WG_N, SCALE_BLOCK);
constexpr int SCALE_SETS = BLOCK_SCALES && SCALE_BLOCK % WG_N != 0 ? 2 : 1;
static_assert(SCALE_SETS == 1 || (SCALE_BLOCK == 2 * SCALE_STEP && WG_N <= SCALE_BLOCK + SCALE_STEP),
              "a blockwise consumer's columns span at most two blocks of B's scales, starting at 0 or half a block");

// BOXES TMA boxes of 128-byte columns side by side, rows row0.. of columns col0 + 64 i (box i
// at dst + i * box_bytes): B's N-major boxes, or A^T's M-major ones; multicast to `mask`.
template <int BOXES, bool MULTICAST>
__device__ __forceinline__ void load_column_boxes(unsigned dst, int box_bytes, const TensorMap* map, unsigned bar,
                                                  int col0, int row0, int matrix, unsigned short mask) {
#pragma unroll
  for (int box = 0; box < BOXES; ++box) {
    if constexpr (MULTICAST)
      tma_load_3d_multicast(dst + box * box_bytes, map, bar, col0 + box * BOX_COLS, row0, matrix, mask);
    else
      tma_load_3d(dst + box * box_bytes, map, bar, col0 + box * BOX_COLS, row0, matrix);
  }
}

#ifdef ZOO_CONV
static_assert(CLUSTER == 1, "a convolution's A tile is one im2col load and its B one weight box (no multicast)");
// The loads of K-tile kt of tile (m0 = its first output pixel, n0 = its first output channel):
// the im2col box of A at the tap's offsets, and the weights' box at the tap (see the header).
__device__ __forceinline__ void load_conv_tiles(unsigned a_dst, unsigned b_dst, const TensorMap* map_a,
                                                const TensorMap* map_b, unsigned bar,
                                                const zoo::ConvGeometry& g, int m0, int n0, int kt) {
  const int c_blocks = g.c_pad / BK, tap = kt / c_blocks, r = tap / g.S, s = tap - r * g.S;
  const int c0 = (kt - tap * c_blocks) * BK;
  const int pq = g.P * g.Q, n = m0 / pq, p = (m0 - n * pq) / g.Q, q = m0 - n * pq - p * g.Q;
  tma_load_im2col_4d(a_dst, map_a, bar, c0, q * g.stride_w - g.pad_w, p * g.stride_h - g.pad_h, n,
                     static_cast<unsigned short>(s * g.dil_w), static_cast<unsigned short>(r * g.dil_h));
  tma_load_4d(b_dst, map_b, bar, c0, s, r, n0);
}
#endif

// A grouped launch's table entry in global memory, packed by the host (zoo/gemm.py,
// GROUP_ENTRY_BYTES): tensor maps at offsets 0, 128, 256, then C and the sizes.
struct alignas(64) GroupEntry {
  TensorMap a, b, c;
  unsigned long long C;
  int M, N, K, ldc, c_tma, unit_begin;
};
// Layout: three 128-byte maps, then C at byte 384 and six ints from 392 (declaration order;
// every field is at its natural alignment), padded to 448.
static_assert(sizeof(TensorMap) == 128 && sizeof(GroupEntry) == 448,
              "zoo/gemm.py packs 448-byte entries: 3 maps, then C at 384, six ints at 392");

// A unit of work: tile (tile_m, tile_n) of matrix `matrix` of GEMM `g`'s batch, its K-tiles
// [kt_begin, kt_end), split `split` of `splits`. Stream-K units: part `split` of the `parts`
// that add up to tail tile `tail_tile` (0 parts: an empty run, nothing to do), the first of
// which keeps its partial in slot `first_slot` (split_k_reduce); else tail_tile = -1.
template <typename OutT>
struct Work {
  Gemm<OutT> g;
  int matrix, tile_m, tile_n, kt_begin, kt_end, split;
  int parts = 1, tail_tile = -1, first_slot = 0;
};

// How a one-GEMM launch's unit numbers decode (Scheduler::tile_work): unit = (matrix of the
// batch, stack, K slice), stacks in grouped order, GROUP stack rows per group. zoo/specs/
// sm90_wgmma.py (unit_layout) works it out once per layout, multipliers included; a grouped
// launch works out each GEMM's here, with plain divisions.
constexpr int GROUP = zoo::cmax(1, ZOO_GROUP_M / CLUSTER_M);  // stack rows per group
struct UnitLayout {
  zoo::Divisor per_matrix;  // units per matrix: stacks x splits
  zoo::Divisor splits;      // K slices per stack
  zoo::Divisor per_group;   // stacks per group: GROUP x stack columns
  zoo::Divisor last_rows;   // stack rows of the last group: GROUP, or the stack rows left
  int k_per_split;          // K-tiles per slice
};
static_assert(sizeof(UnitLayout) == 52, "zoo/specs/sm90_wgmma.py packs a 52-byte UnitLayout");
__host__ __device__ inline UnitLayout plain_layout(int M, int N, int K, int splits) {
  const int stacks_m = zoo::ceil_div(zoo::ceil_div(M, BM), CLUSTER_M);
  const int stacks_n = zoo::ceil_div(zoo::ceil_div(N, BN), CLUSTER_N);
  return {{stacks_m * stacks_n * splits, 0, 0}, {splits, 0, 0}, {GROUP * stacks_n, 0, 0},
          {stacks_m - (stacks_m - 1) / GROUP * GROUP, 0, 0}, zoo::ceil_div(zoo::ceil_div(K, BK), splits)};
}

// Tile scheduler: a cluster owns stacks of CLUSTER_M x CLUSTER_N tiles (a column of the stack
// shares B tiles, a row shares A tiles), in grouped order; CTA `rank` of the cluster takes
// tile (rank % CLUSTER_M, rank / CLUSTER_M) of the stack.
// With split-K (grids under one wave), each stack is `splits` units over slices of K. A
// batched launch walks its matrices one after the other, a grouped launch the GEMMs of its
// table.
// Stream-K (STREAM_K builds, tail_tiles > 0): the tiles of the whole waves go one per unit as
// usual; the tail_tiles after them, which would leave SMs idle in a last wave, are laid end
// to end along K (tail x k_tiles K-tiles) and cut into one run per CTA, equal to within one
// K-tile. A run is at most k_tiles long, so it meets at most two tiles: each CTA gets two
// more units, the part of its run in its first tail tile and the part in the next (often
// empty).
template <typename OutT>
struct Scheduler {
  Gemm<OutT> single;        // the GEMM of a one-GEMM launch
  UnitLayout layout;        // and how its units decode
  const GroupEntry* table;  // or the GEMMs of a grouped launch (splits = 1)
  int count, units, step, splits;
  int whole = 0, tail = 0, k_tiles = 0, tail_work = 0;  // stream-K: tail_work = tail x k_tiles
  // A one-GEMM launch's bias, added to each row of C (one value per column), or none. Kept
  // here, not in Gemm: a pointer more in each unit's Work put it on the stack.
  const OutT* bias;
  Scales scales;  // a scaled GEMM's (ZOO_FP8)
  // A one-GEMM launch's row sums of A over K (ZOO_ROW_SUMS builds), written here, or none.
  OutT* row_sums;
  __device__ Scheduler(const Gemm<OutT>& g, const UnitLayout& layout_, const GroupEntry* table_, int count_,
                       int units_, int splits_, int tail_tiles = 0, const OutT* bias_ = nullptr,
                       const Scales& scales_ = {}, OutT* row_sums_ = nullptr)
      : single(g), layout(layout_), table(table_), count(count_), units(units_), splits(splits_), bias(bias_),
        scales(scales_), row_sums(row_sums_) {
    step = CLUSTER > 1 ? static_cast<int>(cluster_count()) : static_cast<int>(gridDim.x);
    if constexpr (STREAM_K) {
      if (tail_tiles > 0) {  // the host checks that runs are several K-tiles and tail_work x step fits int32
        tail = tail_tiles;
        whole = units - tail;
        k_tiles = zoo::ceil_div(g.K, BK);
        tail_work = tail * k_tiles;
        units = whole + 2 * step;  // CTA b's runs are units whole + b and whole + step + b
      }
    }
  }
  // This CTA's first unit and its place in its cluster's stack of tiles, read from the special
  // registers where used rather than kept: held across the kernel they took two of the vector
  // registers that 128x192ppc2's consumers (192 accumulators) need, and ptxas spilled them.
  __device__ int first() const { return CLUSTER > 1 ? static_cast<int>(cluster_id()) : static_cast<int>(blockIdx.x); }
  __device__ int rank_m() const { return CLUSTER > 1 ? static_cast<int>(cluster_rank()) % CLUSTER_M : 0; }
  __device__ int rank_n() const { return CLUSTER > 1 ? static_cast<int>(cluster_rank()) / CLUSTER_M : 0; }
  // Stream-K: the first K-tile of CTA b's run, and the CTA whose run holds K-tile x of the
  // tail (the last b with run_start(b) <= x).
  __device__ int run_start(int b) const { return static_cast<unsigned>(tail_work * b) / step; }
  __device__ int run_owner(int x) const { return static_cast<unsigned>((x + 1) * step - 1) / tail_work; }
  __device__ Work<OutT> stream_k_work(int unit) const {
    const int b = (unit - whole) % step, part = (unit - whole) / step;
    const int begin = run_start(b), end = run_start(b + 1);
    const int j = begin / k_tiles + part;  // the tail tile
    const int t0 = j * k_tiles;
    Work<OutT> w = tile_work(whole + j);  // splits = 1: the whole tile
    w.tail_tile = j;
    w.kt_begin = max(begin, t0) - t0;
    w.kt_end = min(end, t0 + k_tiles) - t0;
    if (j >= tail || w.kt_begin >= w.kt_end) {  // the run ended in its first tile
      w.kt_begin = w.kt_end = w.parts = 0;
      return w;
    }
    // Part u of the tile is CTA first + u's run. Every run is nonempty (the host's rule), so
    // the CTAs first..last all count in. The tile is the first of each of those runs but
    // perhaps the first CTA's: its second run, when it began in the tile before.
    const int first_cta = run_owner(t0);
    w.split = b - first_cta;
    w.parts = run_owner(t0 + k_tiles - 1) - first_cta + 1;
    w.first_slot = 2 * first_cta + (run_start(first_cta) < t0 ? 1 : 0);
    return w;
  }
  __device__ Gemm<OutT> gemm_of(int unit) const {
    if (table == nullptr) return single;
    const GroupEntry& e = table[zoo::entry_index(table, count, &GroupEntry::unit_begin, unit)];
    return {&e.a, &e.b, &e.c, reinterpret_cast<OutT*>(e.C), 0, e.M, e.N, e.K, e.ldc, e.c_tma, e.unit_begin, nullptr};
  }
  // A tile of a stack past the last M or N tile still runs: its loads are zero-filled and its
  // stores skipped, while its CTA keeps multicasting its shares to the peers.
  __device__ Work<OutT> work(int unit) const {
    if constexpr (STREAM_K) {
      if (tail > 0 && unit >= whole) return stream_k_work(unit);
    }
    return tile_work(unit);
  }
  // Unit `unit` of the whole waves (or of a launch without stream-K).
  __device__ Work<OutT> tile_work(int unit) const {
    const Gemm<OutT> g = gemm_of(unit);
    // One GEMM: the host's layout and multipliers; a grouped launch: this GEMM's, divided plainly.
    return table == nullptr ? decode<true>(g, layout, unit) : decode<false>(g, plain_layout(g.M, g.N, g.K, 1), unit);
  }
  template <bool FAST>
  __device__ Work<OutT> decode(const Gemm<OutT>& g, const UnitLayout& lay, int unit) const {
    Work<OutT> w;
    w.g = g;
    const int local = unit - g.unit_begin;
    w.matrix = lay.per_matrix.div<FAST>(local);
    const int in_matrix = local - w.matrix * lay.per_matrix.d;
    const int stack = lay.splits.div<FAST>(in_matrix);
    w.split = in_matrix - stack * lay.splits.d;
    // Grouped order (zoo::grouped_tile): GROUP stack rows down one stack column, then the next
    // column; the last group may have fewer rows.
    const int group = lay.per_group.div<FAST>(stack);
    const unsigned in_group = stack - group * lay.per_group.d;
    const int first_m = group * GROUP;
    int stack_m, stack_n;
    if (first_m + GROUP <= zoo::ceil_div(zoo::ceil_div(g.M, BM), CLUSTER_M)) {
      stack_m = first_m + in_group % GROUP, stack_n = in_group / GROUP;
    } else {
      stack_n = lay.last_rows.div<FAST>(in_group);
      stack_m = first_m + in_group - stack_n * lay.last_rows.d;
    }
    w.tile_m = stack_m * CLUSTER_M + rank_m();
    w.tile_n = stack_n * CLUSTER_N + rank_n();
    w.kt_begin = w.split * lay.k_per_split;
    w.kt_end = min(zoo::ceil_div(g.K, BK), w.kt_begin + lay.k_per_split);
    return w;
  }
};

// Split-K: every unit of a tile stores its fp32 partial (in the accumulator layout, one float4
// per thread per step, coalesced) and counts itself in; the unit that arrives last adds the
// others' partials and runs the epilogue. No unit waits for another, so a persistent grid
// cannot deadlock whatever order it meets the units in. Returns whether this unit finishes.
// Stream-K's parts of a tail tile do the same, with a counter per tail tile and slice (split-K
// and stream-K never share a launch, so both count from the workspace's first counter) and
// partials per CTA and run: slot 2 b + run for CTA b; part u > 0 of a tile is its CTA's run 0,
// part 0's slot is first_slot.
template <typename OutT>
__device__ __forceinline__ bool split_k_reduce(float (&acc)[M_SUBS][ACC_REGS], const Work<OutT>& w,
                                               const Scheduler<OutT>& sched, int consumer,
                                               float* workspace, int* counters,
                                               volatile int* flag) {
  constexpr int VECS = ACC_REGS / 4;  // float4s per thread and wgmma row block
  const int t = threadIdx.x % WG_THREADS;
  const int slice = PINGPONG ? 0 : consumer;
  // NOTE: a float4 of row block s holds rows row0 + 64 s and row0 + 64 s + 8 (TF32: columns).
  // Row blocks wholly past M are neither stored nor read: a skinny M (16 rows of a 128-row
  // tile) moves a fraction of the partials.
  const int row0 = w.tile_m * BM + (slice % (BM / WG_M)) * WG_M + (t / 32) * 16 + (t % 32) / 4;
  auto live = [&](int s) { return TRANSPOSED || row0 + 64 * s < w.g.M; };
  constexpr long long PARTIAL = M_SUBS * VECS * WG_THREADS;  // float4s of a slice's partial
  // Tiles counted with the stacks' dummies past M and N.
  const int tiles_m = zoo::ceil_div(zoo::ceil_div(w.g.M, BM), CLUSTER_M) * CLUSTER_M;
  const int tiles_n = zoo::ceil_div(zoo::ceil_div(w.g.N, BN), CLUSTER_N) * CLUSTER_N;
  const bool stream_k = STREAM_K && w.tail_tile >= 0;
  const int slot = stream_k ? w.tail_tile * SLICES + slice
                            : ((w.matrix * tiles_m + w.tile_m) * tiles_n + w.tile_n) * SLICES + slice;
  const int parts = stream_k ? w.parts : sched.splits;
  float4* const partials = reinterpret_cast<float4*>(workspace) + static_cast<long long>(slot) * sched.splits * PARTIAL;
  auto partial = [&](int u) {
    if (stream_k)
      return reinterpret_cast<float4*>(workspace) +
             ((u == 0 ? w.first_slot : 2 * (w.first_slot / 2 + u)) * SLICES + slice) * PARTIAL;
    return partials + u * PARTIAL;
  };
  float4* const mine = partial(w.split);
#pragma unroll
  for (int s = 0; s < M_SUBS; ++s)
    if (live(s))
#pragma unroll
      for (int i = 0; i < VECS; ++i)
        mine[(s * VECS + i) * WG_THREADS + t] =
            make_float4(acc[s][4 * i], acc[s][4 * i + 1], acc[s][4 * i + 2], acc[s][4 * i + 3]);
  named_barrier(1 + consumer, WG_THREADS);  // every thread's partial stored before the release
  if (t == 0) flag[consumer] = zoo::atomic_add_acq_rel_gpu(counters + slot, 1);
  named_barrier(1 + consumer, WG_THREADS);  // the others' partials visible to all past the acquire
  if (flag[consumer] != parts - 1) return false;
  // NOTE: every unit has counted in; zero the count for the next launch on this stream, which
  // reuses the workspace (the host zeroes counters only when it allocates them).
  if (t == 0) counters[slot] = 0;
  for (int s = 0; s < parts; ++s) {
    if (s == w.split) continue;
    const float4* const other = partial(s);
#pragma unroll
    for (int r = 0; r < M_SUBS; ++r)
      if (live(r))
#pragma unroll
      for (int i = 0; i < VECS; ++i) {
        const float4 v = __ldcg(other + (r * VECS + i) * WG_THREADS + t);  // from other SMs: not via L1
        float* const a = acc[r];
        a[4 * i] += v.x, a[4 * i + 1] += v.y, a[4 * i + 2] += v.z, a[4 * i + 3] += v.w;
      }
  }
  return true;
}

// Each consumer warp tells every CTA of the cluster that it is done reading a stage: lane r
// arrives on CTA r's barrier (all at once, rather than one lane in turn).
__device__ __forceinline__ void release(unsigned empty_bar, int lane) {
  if constexpr (CLUSTER > 1) {
    if (lane < CLUSTER) mbar_arrive_cluster(empty_bar, lane);
  } else {
    if (lane == 0) mbar_arrive(empty_bar);
  }
}

// ---- Transposed-tile helpers (TF32, swap-AB). A consumer's accumulator rows are C columns,
// its columns C rows: acc[4 j + 2 h + e] is C row 8 j + 2 (lane % 4) + e of the slice, C column
// transposed_column(warp, h, lane / 4).
// TF32: row r = 16 warp + 8 h + g of the wgmma A operand (g = lane / 4) is C column n_local(r) of
// the slice: group q = 2 warp + h covers 128-byte box q / 4 and 16-byte chunks q % 4 and q % 4 + 4
// (word g % 4 of each). One fragment load reads 8 columns g at each of 4 k rows (k = t or t + 4,
// t = lane % 4); the swizzle XORs the chunk with k, so the 32 lanes hit 32 different banks.
__device__ __forceinline__ int tf32_column(int warp, int h, int g) {
  const int q = 2 * warp + h;
  return (q / 4) * BOX_COLS + 4 * (q % 4 + 4 * (g / 4)) + g % 4;
}
// Swap-AB: wgmma reads the B stage's columns in order, so A-operand row r is C column r.
__device__ __forceinline__ int transposed_column(int warp, int h, int g) {
  return TF32 ? tf32_column(warp, h, g) : 16 * warp + 8 * h + g;
}

// One output element into shared memory, converted to C's type.
__device__ __forceinline__ void st_shared_one(unsigned addr, float x, float*) {
  asm volatile("st.shared.f32 [%0], %1;" ::"r"(addr), "f"(x) : "memory");
}
__device__ __forceinline__ void st_shared_one(unsigned addr, float x, half*) {
  asm volatile("st.shared.b16 [%0], %1;" ::"r"(addr), "h"(__half_as_ushort(__float2half_rn(x))) : "memory");
}
__device__ __forceinline__ void st_shared_one(unsigned addr, float x, __nv_bfloat16*) {
  asm volatile("st.shared.b16 [%0], %1;" ::"r"(addr), "h"(__bfloat16_as_ushort(__float2bfloat16_rn(x))) : "memory");
}
__device__ __forceinline__ float to_out(float x, float*) { return x; }
__device__ __forceinline__ half to_out(float x, half*) { return __float2half_rn(x); }
__device__ __forceinline__ __nv_bfloat16 to_out(float x, __nv_bfloat16*) { return __float2bfloat16_rn(x); }

// Epilogue of the transposed tile through TMA: chunks of C_BOX_ROWS C rows x the slice's 64
// columns (one 128-byte box of 16-bit C, two of fp32), written element by element into the
// swizzled staging boxes (a warp's stores land in distinct 16-byte chunks of 4 or 8 rows: no
// bank conflicts), then stored by the leader.
template <typename OutT>
__device__ __forceinline__ void store_tile_tma_transposed(const float (&acc)[ACC_REGS], unsigned buf,
                                                          const TensorMap* tmap_c, int row0, int col0,
                                                          int matrix, int consumer, int warp, int lane,
                                                          const OutT* bias, int cols) {
  constexpr int BOX_COLS_C = SWIZZLE_BYTES / sizeof(OutT), PER_CHUNK = 16 / sizeof(OutT);
  constexpr int BOXES = WG_N / BOX_COLS_C;
  static_assert(!TRANSPOSED || (WG_N == 64 && BOXES <= EPI_BOXES && WG_M % C_BOX_ROWS == 0),
                "a chunk is C_BOX_ROWS rows x the slice's 64 columns");
  const bool leader = threadIdx.x % WG_THREADS == 0;
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int q = 0; q < WG_M / C_BOX_ROWS; ++q) {
    if (leader) bulk_wait_read<0>();
    named_barrier(1 + consumer, WG_THREADS);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = transposed_column(warp, h, g), nn = n % BOX_COLS_C;
      const unsigned box = buf + (n / BOX_COLS_C) * EPI_BOX_BYTES;
      const float b = bias_pair(bias, col0 + n, cols).x;
#pragma unroll
      for (int jj = 0; jj < C_BOX_ROWS / 8; ++jj) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int r = 8 * jj + 2 * t + e;  // C row within the chunk
          const unsigned addr = box + r * SWIZZLE_BYTES + (((nn / PER_CHUNK) ^ (r % 8)) << 4) +
                                sizeof(OutT) * (nn % PER_CHUNK);
          st_shared_one(addr, acc[4 * ((C_BOX_ROWS / 8) * q + jj) + 2 * h + e] + b, static_cast<OutT*>(nullptr));
        }
      }
    }
    fence_proxy_async();
    named_barrier(1 + consumer, WG_THREADS);
    if (leader) {
#pragma unroll
      for (int b = 0; b < BOXES; ++b)
        tma_store_3d(tmap_c, buf + b * EPI_BOX_BYTES, col0 + b * BOX_COLS_C, row0 + C_BOX_ROWS * q, matrix);
      bulk_commit();
    }
  }
}

// Ring position: `n` K-tiles further on (the phase flips at each lap).
__device__ __forceinline__ void advance_ring(int& stage, unsigned& phase, int n) {
  if (n <= 0) return;
  stage += n;
  phase ^= (stage / STAGES) & 1;
  stage %= STAGES;
}

template <int R, int N>
__device__ __forceinline__ void zero_accumulators(float (&acc)[R][N]) {
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int i = 0; i < N; ++i) acc[r][i] = 0.f;
}

// One k16 step of a consumer's slice from stage descriptors a (A rows) and b (B columns): a
// wgmma per 64-row block of A, or for swap-AB one with the operands' roles swapped (C^T =
// B^T A^T). N, the accumulators per thread, keeps the wrapper that is not built unnamed.
template <bool BF16, int R, int N>
__device__ __forceinline__ void mma_step(float (&acc)[R][N], unsigned long long a, unsigned long long b,
                                         int accumulate) {
  if constexpr (SWAP_AB && FP8) {
    WgmmaFp8<2 * N>::mma(acc[0], b, a, accumulate);
  } else if constexpr (SWAP_AB) {
    WgmmaSwapAB<2 * N, BF16>::mma(acc[0], b, a, accumulate);
  } else if constexpr (FP8) {
#pragma unroll
    for (int s = 0; s < R; ++s) WgmmaFp8<2 * N>::mma(acc[s], a + s * (A_BLOCK_BYTES >> 4), b, accumulate);
  } else {
#pragma unroll
    for (int s = 0; s < R; ++s)  // row block s: 64 rows (64 x 128 B) further into A
      Wgmma<2 * N, BF16>::mma(acc[s], a + s * (A_BLOCK_BYTES >> 4), b, accumulate);
  }
}
// ROW_SUMS: d (64 x 8, f32) (+)= A (64 x 16, M-major) times a 16 x 8 tile of ones: each of
// d's columns is the sum of A's rows over the k16 step.
template <bool BF16>
__device__ __forceinline__ void mma_ones(float (&d)[4], unsigned long long desc_a, unsigned long long desc_b,
                                         int accumulate) {
  if constexpr (BF16) {
    ZOO_WGMMA(8, "bf16", "1, 0", 4, 5, 6, ZOO_REGS4, ZOO_ACC4(0));
  } else {
    ZOO_WGMMA(8, "f16", "1, 0", 4, 5, 6, ZOO_REGS4, ZOO_ACC4(0));
  }
}
// The tile of ones as wgmma's B operand, without a swizzle: both byte offsets 128, so however
// the core matrices are laid out, every address read lies in the 256 B of ones.
__device__ __forceinline__ unsigned long long ones_descriptor(unsigned smem_addr) {
  return static_cast<unsigned long long>((smem_addr & 0x3FFFF) >> 4) | ((128ull >> 4) << 16) | ((128ull >> 4) << 32);
}
// TF32: one k8 step, A's fragment from registers.
template <int N>
__device__ __forceinline__ void mma_tf32(float (&acc)[N], const unsigned (&frag)[4], unsigned long long b,
                                         int accumulate) {
  WgmmaTf32<2 * N>::mma(acc, frag, b, accumulate);
}

// ---- FP8 scales (Scales), applied after the main loop, between a tile's last MMAs and the next
// tile's first: kept short (NOTES.md, "The FP8 epilogue's scales"). Per-tensor scales (strides
// 0): every accumulator, in either layout, times one product, which each consumer loads at
// its start (tensor_scale), not after a tile's last MMAs: the swap-AB builds 0-9% faster per
// tensor, most at short K; the 128-row builds, with the early issue, up to 1.7 points of torch
// (H200; NOTES.md, "Scales held through the K loop"). Per row, HOLD_SCALES builds load a
// unit's scales as it starts; the others after its last MMAs.
__device__ __forceinline__ bool per_tensor(const Scales& sc) { return sc.a_row == 0 && sc.b_col == 0; }
__device__ __forceinline__ void scale_all(float (&acc)[M_SUBS][ACC_REGS], float s) {
#pragma unroll
  for (int r = 0; r < M_SUBS; ++r)
#pragma unroll
    for (int i = 0; i < ACC_REGS; ++i) acc[r][i] *= s;
}
// Per row or column: a thread's accumulator acc[s][4 j + 2 h + e] is C row row0 + 64 s + 8 h,
// column col0 + 8 j + e (row0, col0: its first; the wgmma m64 accumulator layout), times
// sa(row) sb(col) (rows and columns past C's are not stored: scaled by 0). Contiguous column
// scales are read in pairs (N is a multiple of 16, so a pair starting inside C ends inside it).
struct RowColScales {
  float sa[M_SUBS][2];
  float2 sb[ACC_REGS / 4];
};
// All loads first, then the products (apply_row_col_scales): a load used as it arrives would
// wait out its latency before the next is issued.
__device__ __forceinline__ RowColScales load_row_col_scales(const Scales& sc, int row0, int col0, int M, int N) {
  RowColScales r;
#pragma unroll
  for (int s = 0; s < M_SUBS; ++s)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 64 * s + 8 * h;
      r.sa[s][h] = row < M ? __ldg(sc.a + static_cast<long long>(row) * sc.a_row) : 0.f;
    }
  if (sc.b_col == 1 && (reinterpret_cast<uintptr_t>(sc.b) & 7) == 0) {
    const float2* const b = reinterpret_cast<const float2*>(sc.b + col0);
#pragma unroll
    for (int j = 0; j < ACC_REGS / 4; ++j) r.sb[j] = col0 + 8 * j < N ? __ldg(b + 4 * j) : make_float2(0.f, 0.f);
  } else {
#pragma unroll
    for (int j = 0; j < ACC_REGS / 4; ++j) {
      const int col = col0 + 8 * j;
      r.sb[j].x = col < N ? __ldg(sc.b + static_cast<long long>(col) * sc.b_col) : 0.f;
      r.sb[j].y = col + 1 < N ? __ldg(sc.b + static_cast<long long>(col + 1) * sc.b_col) : 0.f;
    }
  }
  return r;
}
__device__ __forceinline__ void apply_row_col_scales(float (&acc)[M_SUBS][ACC_REGS], const RowColScales& r) {
#pragma unroll
  for (int j = 0; j < ACC_REGS / 4; ++j)
#pragma unroll
    for (int s = 0; s < M_SUBS; ++s)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        acc[s][4 * j + 2 * h] *= r.sa[s][h] * r.sb[j].x;
        acc[s][4 * j + 2 * h + 1] *= r.sa[s][h] * r.sb[j].y;
      }
}
// Swap-AB tiles (TRANSPOSED, one row block): accumulator acc[0][4 j + 2 h + e] is C row row0 + 8 j
// + 2 (lane % 4) + e, column col0 + transposed_column(warp, h, lane / 4) (as the transposed
// stores read it).
__device__ __forceinline__ void scale_transposed(float (&acc)[M_SUBS][ACC_REGS], const Scales& sc, float tensor_scale,
                                                 int row0, int col0, int M, int N, int warp, int lane) {
  if (per_tensor(sc)) return scale_all(acc, tensor_scale);
  float sb[2], sa[ACC_REGS / 4][2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int col = col0 + transposed_column(warp, h, lane / 4);
    sb[h] = col < N ? __ldg(sc.b + static_cast<long long>(col) * sc.b_col) : 0.f;
  }
#pragma unroll
  for (int j = 0; j < ACC_REGS / 4; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int row = row0 + 8 * j + 2 * (lane % 4) + e;
      sa[j][e] = row < M ? __ldg(sc.a + static_cast<long long>(row) * sc.a_row) : 0.f;
    }
#pragma unroll
  for (int j = 0; j < ACC_REGS / 4; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) acc[0][4 * j + 2 * h + e] *= sa[j][e] * sb[h];
}
// Per row or column: a tile's scales fetched into L1 as its unit starts, so that the epilogue's
// loads hit there rather than wait for L2 (one 128-byte line a lane: the warp's rows, and the
// slice's columns where they are contiguous).
__device__ __forceinline__ void prefetch_scales(const Scales& sc, int row0, int col0, int M, int N, int lane) {
  if (sc.a_row != 0 && row0 < M) prefetch_l1(sc.a + static_cast<long long>(row0) * sc.a_row);
  const int col = col0 + 32 * lane;
  if (sc.b_col == 1 && lane < WG_N / 32 && col < N) prefetch_l1(sc.b + col);
}
// The three-consumer blockwise builds read a thread's two rows of scales (r and r + 8) in one
// 8-byte load, so their slots keep each 16 rows' scales in pairs: row r at paired_row(r). The
// two-consumer builds ran 0.5-1% slower that way and keep the rows in order (NOTES.md,
// "Blockwise scales read as they are needed").
constexpr bool PAIRED_ROW_SCALES = BLOCK_SCALES && CONSUMERS == 3;
__device__ __forceinline__ int paired_row(int r) { return (r & ~15) + 2 * (r & 7) + ((r >> 3) & 1); }
// Blockwise: the producer warpgroup's second warp stages each K-tile's scales in its stage's
// slot, sa(row, kt) of the tile's BM rows and sb(kt, block) of the 128-wide column blocks from
// the tile's first on (0 past M, N), by cp.async, each lane counting as one arrival on the
// stage's full barrier once its copies land: the consumers find them with the K-tile's
// operands. Read from global memory by the consumers, a K-tile ahead or two, they waited for
// them on every K-tile (ncu: 41-53% of the blockwise build's stalls on L1TEX, 8192^3; NOTES.md).
template <typename OutT>
__device__ __forceinline__ void stage_block_scales(const Scheduler<OutT>& sched, unsigned full_bar,
                                                   unsigned empty_bar, unsigned scale_smem, int lane) {
  const Scales& sc = sched.scales;
  int stage = 0;
  unsigned phase = 0;
  for (int unit = sched.first(); unit < sched.units; unit += sched.step) {
    const Work<OutT> w = sched.work(unit);
    // This lane's rows lane + 32 i of the tile and its column block (lanes 0-3), at K-tile
    // kt_begin, stepped along K (the producer warpgroup has 40 registers a thread).
    const int rows = w.g.M - w.tile_m * BM - lane;  // this lane's row i is inside M if 32 i < rows
    const float* a = sc.a + (w.tile_m * BM + lane) * static_cast<long long>(sc.a_row) +
                     w.kt_begin * static_cast<long long>(sc.a_k);
    const int block = w.tile_n * BN / SCALE_BLOCK + lane;
    const bool b_live = lane < 4 && block * SCALE_BLOCK < w.g.N;
    const float* b = sc.b + (b_live ? w.kt_begin * static_cast<long long>(sc.b_k) + block * static_cast<long long>(sc.b_col) : 0);
    for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
      mbar_wait(empty_bar + 8 * stage, phase ^ 1);  // the slot's last K-tile is consumed
      const unsigned slot = scale_smem + stage * SCALE_SLOT_BYTES;
      const unsigned dst = slot + 4 * (PAIRED_ROW_SCALES ? paired_row(lane) : lane);
#pragma unroll
      for (int i = 0; i < BM / 32; ++i) {
        const bool live = 32 * i < rows;
        cp_async_4(dst + 128 * i, live ? a + 32 * i * static_cast<long long>(sc.a_row) : sc.a, live ? 4 : 0);
      }
      if (lane < 4) cp_async_4(slot + BM * 4 + 4 * lane, b, b_live ? 4 : 0);
      a += sc.a_k;
      if (b_live) b += sc.b_k;
      cp_async_arrive(full_bar + 8 * stage);
      if (++stage == STAGES) stage = 0, phase ^= 1;
    }
  }
}

// Promotion (PROMOTE): a K-tile's MMAs from stage descriptors a, b into `part` (overwritten),
// and its sums times the K-tile's block scales f (1 but for the blockwise recipe) added into
// acc in fp32 once they are done.
template <bool BF16, int R, int N>
__device__ __forceinline__ void issue_promoted(float (&part)[R][N], unsigned long long a, unsigned long long b) {
#pragma unroll
  for (int ks = 0; ks < K_STEPS; ++ks)
    mma_step<BF16>(part, a + ((ks * A_K_STEP_BYTES) >> 4), b + ((ks * 32) >> 4), ks > 0 ? 1 : 0);
}
// SPLIT: the 8-column groups (4 accumulators each) that take the first block's scales f[0].
template <int SPLIT, int R, int N>
__device__ __forceinline__ void add_promoted(float (&acc)[M_SUBS][ACC_REGS], float (&part)[R][N],
                                             const float (&f)[SCALE_SETS][M_SUBS][2]) {
  fence_accumulators(part);
#pragma unroll
  for (int s = 0; s < R; ++s)
#pragma unroll
    for (int i = 0; i < N; ++i) acc[s][slot(i)] += part[s][i] * f[i / 4 < SPLIT ? 0 : SCALE_SETS - 1][s][(i / 2) % 2];
}

// Hardware barriers 1..CONSUMERS: one consumer warpgroup's own steps; the next CONSUMERS: the
// ping-pong or promoted consumers' turns (bar ORDER_BARRIER + c: consumer c may issue its MMAs).
constexpr int ORDER_BARRIER = 1 + CONSUMERS;

// ---- Consumers: warpgroup `consumer` computes rows wg_m0.., columns wg_n0.. of each tile.
template <bool BF16, typename OutT>
__device__ __forceinline__ void consume(unsigned a_smem, unsigned b_smem, unsigned epi_smem,
                                        unsigned full_bar, unsigned empty_bar, unsigned ones_smem,
                                        unsigned scale_smem, const Scheduler<OutT>& sched, int consumer,
                                        float* workspace, int* counters,
                                        volatile int* split_flags) {
  setmaxnreg_inc<CONSUMER_REGS>();
  const int slice = PINGPONG ? 0 : consumer;  // a ping-pong consumer's slice is the whole tile
  const int wg_m0 = (slice % (BM / WG_M)) * WG_M, wg_n0 = (slice / (BM / WG_M)) * WG_N;
  const int lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;

  // Descriptors of stage 0 for this warpgroup's slice; a stage, a k step and a B box are
  // byte offsets added to the start-address field (>> 4).
  // A: K-major, 8-row groups 1024 B apart (SBO); LBO unused with a swizzle this wide.
  // Swap-AB uses the same two descriptors with the roles swapped: A's is wgmma's B operand
  // (WG_M rows, K-major), B's box wg_n0 / 64 is wgmma's A operand (64 columns, N-major).
  // A column-major: M-major boxes of 64 rows' columns; the slice starts at box wg_m0 / 64.
  const unsigned long long desc_a0 =
      A_M_MAJOR ? sw128_descriptor(a_smem + (wg_m0 / BOX_COLS) * A_BOX_BYTES, A_BOX_BYTES, ATOM_BYTES)
                : sw128_descriptor(a_smem + wg_m0 * SWIZZLE_BYTES, 16, ATOM_BYTES);
#ifdef ZOO_B_K_MAJOR
  // B K-major like A (a convolution's weights, or B given column-major): BN rows of 128 B,
  // 8-row groups 1024 B apart.
  const unsigned long long desc_b0 = sw128_descriptor(b_smem + wg_n0 * SWIZZLE_BYTES, 16, ATOM_BYTES);
  constexpr int B_K_STEP_BYTES = 32;  // a k16 step: 32 bytes along the swizzled row
#else
  // B: N-major; 128-byte-wide boxes B_BOX_BYTES apart (LBO), 8-row K groups 1024 B apart (SBO).
  const unsigned long long desc_b0 =
      sw128_descriptor(b_smem + (wg_n0 / BOX_COLS) * B_BOX_BYTES, B_BOX_BYTES, ATOM_BYTES);
  constexpr int B_K_STEP_BYTES = MMA_K * SWIZZLE_BYTES;  // a k16 step: 16 rows of 128 B
#endif
  // TF32: this thread's fragment words in a B stage, for k = t (e = 0) and t + 4 (e = 1) of a
  // k8 step, rows g (h = 0) and g + 8 (h = 1): box, swizzled 16-byte chunk, word.
  unsigned frag_off[2][2];
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int n = wg_n0 + tf32_column(warp, h, lane / 4), k = lane % 4 + 4 * e;
      frag_off[h][e] = (n / BOX_COLS) * B_BOX_BYTES + k * SWIZZLE_BYTES +
                       ((((n % BOX_COLS) / 4) ^ k) << 4) + 4 * (n % 4);
    }

  float acc[M_SUBS][ACC_REGS];
  zero_accumulators(acc);
  // ROW_SUMS: a unit's sums of A's rows over K, a 64 x 8 accumulator a row block (its 8
  // columns alike).
  float rows[ROW_SUMS ? M_SUBS : 1][4];
  const unsigned long long ones = ones_descriptor(ones_smem);
  // PROMOTE: one K-tile's sums, added into acc once its MMAs are done (see the main loop).
  float part[PROMOTE ? M_SUBS : 1][PROMOTE ? ACC_REGS : 1];
  bool first_issue = true;  // PROMOTE: consumer 0's first MMAs of the grid wait for no turn
  // The per-tensor scale product, loaded once (scale_all, scale_transposed); 1 otherwise.
  const Scales& sc = sched.scales;
  const float tensor_scale = FP8 && !BLOCK_SCALES && sc.a != nullptr && per_tensor(sc) ? __ldg(sc.a) * __ldg(sc.b) : 1.f;
  // This thread's first row and column of a tile's slice (the accumulator layout).
  const int thread_row = wg_m0 + warp * 16 + lane / 4, thread_col = wg_n0 + 2 * (lane % 4);
  RowColScales held;  // HOLD_SCALES: this unit's per-row and per-column scales

  int early_stage = -1;  // EARLY_ISSUE: the stage of this unit's first K-tile, issued in the last unit
  int stage = 0;
  unsigned phase = 0;
  bool c_tma_used = false;
  unsigned epi_staged = 0;  // C boxes this consumer has staged (store_tile_tma)
  const TensorMap* c_fenced = nullptr;
  // turn: the unit's place in this CTA's list. Ping-pong consumers take turns: consumer c
  // owns the units with turn % 2 == c, skips the other's K-tiles in the ring, and issues its
  // MMAs only once the other has issued all of its previous unit's (ORDER_BARRIER): so the
  // tensor cores serve one tile at a time, and no consumer waits on a ring stage more than
  // one lap ahead of what has been consumed (the parity wait could not tell the laps apart).
  int turn = 0;
  for (int unit = sched.first(); unit < sched.units; unit += sched.step, ++turn) {
    Work<OutT> w = sched.work(unit);
    // The unit's K range is the same in every lane, but ptxas cannot tell in the promoted builds;
    // broadcast from lane 0 it is uniform, and the ring stage and wgmma descriptors with it
    // (the builds with turns: the swap tiles keep them in vector registers, TURNS).
    if constexpr (PROMOTE) {
      w.kt_begin = __shfl_sync(0xffffffffu, w.kt_begin, 0);
      w.kt_end = __shfl_sync(0xffffffffu, w.kt_end, 0);
    }
    if (PINGPONG && turn % 2 != consumer) {
      advance_ring(stage, phase, w.kt_end - w.kt_begin);
      continue;
    }
    if (PINGPONG && turn > 0) named_barrier(ORDER_BARRIER + consumer, 2 * WG_THREADS);
    const int tile_m = w.tile_m, tile_n = w.tile_n;
    if constexpr (HOLD_SCALES) {
      if (sc.a != nullptr && !per_tensor(sc))
        held = load_row_col_scales(sc, tile_m * BM + thread_row, tile_n * BN + thread_col, w.g.M, w.g.N);
    } else if constexpr (FP8 && !BLOCK_SCALES && !TRANSPOSED) {
      if (sched.scales.a != nullptr)
        prefetch_scales(sched.scales, tile_m * BM + thread_row, tile_n * BN + wg_n0, w.g.M, w.g.N, lane);
    }
    // A new GEMM's C map is first read by this unit's stores: fetch it under the MMAs.
    if (sched.table != nullptr && w.g.c_tma && w.g.c != c_fenced && threadIdx.x % WG_THREADS == 0)
      tma_prefetch_descriptor(w.g.c);

    // Row sums, summed by every unit (no branch in the K loop) and written by the units of the
    // first tile column over the whole of K (a K slice's would be partial: the host asks for
    // them only without split-K or stream-K).
    const bool write_rows = ROW_SUMS && sched.row_sums != nullptr && tile_n == 0 && wg_n0 == 0 &&
                            w.kt_begin == 0 && w.kt_end == zoo::ceil_div(w.g.K, BK) && w.kt_end > 0;

    int prev_stage = -1;
    if constexpr (PROMOTE) {
      // Each K-tile's MMAs into `part` (fresh), waited for, then times the K-tile's block
      // scales added into acc in fp32. While one consumer adds, another's MMAs must keep the
      // tensor cores busy: they issue their K-tiles' MMAs in strict turns (TURNS; ORDER_BARRIER
      // + c: consumer c may issue), so one's MMAs run while the other waits for and adds its own
      // (three consumers: while the other two's run). Left to themselves they wait on the same
      // stage, issue together, finish together and add together, the tensor cores idle
      // meanwhile. (Two sets of sums, one in flight while the other is added, made ptxas wait
      // for every wgmma before the next: reading a set while another group is pending is more
      // than it tracks.)
      zero_accumulators(acc);
      // The blockwise build's scales of a K-tile wait in its stage's slot (stage_block_scales):
      // sa and sb of this thread's rows, read once the stage is full (load_scales), and their
      // products f (block_scales); 1 in the other recipes' builds, whose scales wait for the
      // epilogue. b_slot: the column block of this consumer's slice, counted from the tile's
      // first (where a slice spans two blocks, SCALE_SETS, the first of them).
      const int b_slot = (tile_n * BN + wg_n0) / SCALE_BLOCK - tile_n * BN / SCALE_BLOCK;
      auto load_scales = [&](float (&sa)[M_SUBS][2], float (&sb)[SCALE_SETS], int s_stage) {
        const unsigned slot = scale_smem + s_stage * SCALE_SLOT_BYTES;
#pragma unroll
        for (int q = 0; q < SCALE_SETS; ++q)
          sb[q] = BLOCK_SCALES ? __uint_as_float(ld_shared_u32(slot + BM * 4 + 4 * (b_slot + q))) : 1.f;
#pragma unroll
        for (int s = 0; s < M_SUBS; ++s) {
          if (!BLOCK_SCALES) {
            sa[s][0] = sa[s][1] = 1.f;
          } else if (PAIRED_ROW_SCALES) {  // rows thread_row and + 8, side by side
            const uint2 v = ld_shared_u32x2(slot + 4 * paired_row(thread_row + 64 * s));
            sa[s][0] = __uint_as_float(v.x), sa[s][1] = __uint_as_float(v.y);
          } else {
#pragma unroll
            for (int h = 0; h < 2; ++h) sa[s][h] = __uint_as_float(ld_shared_u32(slot + 4 * (thread_row + 64 * s + 8 * h)));
          }
        }
      };
      auto block_scales = [&](float (&f)[SCALE_SETS][M_SUBS][2], const float (&sa)[M_SUBS][2], const float (&sb)[SCALE_SETS]) {
#pragma unroll
        for (int q = 0; q < SCALE_SETS; ++q)
#pragma unroll
          for (int s = 0; s < M_SUBS; ++s)
#pragma unroll
            for (int h = 0; h < 2; ++h) f[q][s][h] = BLOCK_SCALES ? sa[s][h] * sb[q] : 1.f;
      };
      // Two blocks: this tile's slice starts at 0 or SCALE_STEP inside its first block.
      const bool half_split = SCALE_SETS == 2 && (tile_n * BN + wg_n0) % SCALE_BLOCK != 0;
      // The wait for the next K-tile's stage (and its scales' loads) runs while this K-tile's
      // MMAs do, so between its MMAs' end and its next issue a consumer only adds and waits for
      // its turn: that span must stay under the other consumer's MMAs (NOTES.md, "The FP8
      // consumers' critical path").
      float f[SCALE_SETS][M_SUBS][2], sa[M_SUBS][2], sb[SCALE_SETS];
      if (w.kt_begin < w.kt_end) {
        // (EARLY_ISSUE: the first K-tile's stage was waited for, and is held, by its early issue;
        // those builds read no block scales, so the stage load_scales is given does not matter.)
        if (!EARLY_ISSUE || early_stage < 0) mbar_wait(full_bar + 8 * stage, phase);
        load_scales(sa, sb, stage);
        block_scales(f, sa, sb);
      }
      // A K-tile's MMAs into part, in this consumer's turn; then the next consumer's turn,
      // unless this was the last consumer's last issue of the grid (unit u's K-tile kt).
      auto issue = [&](int u, int kt, int kt_end) {
        // (The turns' tests are spelt for two consumers as they were measured: the general
        // forms compile two consumers' builds differently.)
        if (TURNS && ((CONSUMERS == 2 ? consumer == 1 : consumer != 0) || !first_issue))
          named_barrier(ORDER_BARRIER + consumer, 2 * WG_THREADS);
        first_issue = false;
        wgmma_fence();
        issue_promoted<BF16>(part, desc_a0 + ((stage * A_STAGE_BYTES) >> 4), desc_b0 + ((stage * B_STAGE_BYTES) >> 4));
        wgmma_commit();
        if (TURNS && ((CONSUMERS == 2 ? consumer == 0 : consumer != CONSUMERS - 1) || kt + 1 < kt_end ||
                      u + sched.step < sched.units))
          named_barrier_arrive(ORDER_BARRIER + (CONSUMERS == 2 ? 1 - consumer : (consumer + 1) % CONSUMERS),
                               2 * WG_THREADS);
        const int issued = stage;
        if (++stage == STAGES) stage = 0, phase ^= 1;
        return issued;
      };
      // A K-tile once issued: the next one's stage waited for and its scales loaded, this one's
      // MMAs waited for, its stage released and its sums added.
      auto promote = [&](int issued, int kt) {
        if (kt + 1 < w.kt_end) {
          mbar_wait(full_bar + 8 * stage, phase);
          load_scales(sa, sb, stage);
        } else {  // past the unit's last K-tile: 1, so that f stays a constant 1 in the plain builds
#pragma unroll
          for (int q = 0; q < SCALE_SETS; ++q) sb[q] = 1.f;
#pragma unroll
          for (int s = 0; s < M_SUBS; ++s) sa[s][0] = sa[s][1] = 1.f;
        }
        // The slot of `issued` is refilled once the stage is released (lane 0 of each warp,
        // after the wgmma wait): its LDS were issued, and their products taken, a K-tile
        // earlier.
        wgmma_wait<0>();
        release(empty_bar + 8 * issued, lane);
        if (half_split)
          add_promoted<SCALE_STEP / 8>(acc, part, f);
        else
          add_promoted<SCALE_BLOCK / 8>(acc, part, f);
        // The next K-tile's products only now: taken as its scales were loaded, they held the
        // consumer until the loads landed (ncu, 128x128pb at 4096^3: 7% of the stall samples
        // on those FMULs).
        block_scales(f, sa, sb);
      };
      int kt = w.kt_begin;
      if (EARLY_ISSUE && early_stage >= 0 && kt < w.kt_end) {  // issued before the last unit's epilogue
        promote(early_stage, kt++);
        early_stage = -1;
      }
      for (; kt < w.kt_end; ++kt) promote(issue(unit, kt, w.kt_end), kt);
      if constexpr (EARLY_ISSUE) {  // the next unit's first K-tile, before this unit's epilogue
        const int next = unit + sched.step;
        if (next < sched.units) {
          const Work<OutT> nw = sched.work(next);
          const int kt_begin = __shfl_sync(0xffffffffu, nw.kt_begin, 0), kt_end = __shfl_sync(0xffffffffu, nw.kt_end, 0);
          if (kt_begin < kt_end) {
            mbar_wait(full_bar + 8 * stage, phase);
            early_stage = issue(next, kt_begin, kt_end);
          }
        }
      }
    }
    for (int kt = w.kt_begin; kt < (PROMOTE ? w.kt_begin : w.kt_end); ++kt) {  // unpromoted builds' loop
      mbar_wait(full_bar + 8 * stage, phase);
      if constexpr (TF32) {
        // One commit group per k8 step, each reading its own 4 fragment registers: before a
        // step's registers are reloaded, the previous K-tile's same step must be done, so 3
        // groups stay in flight while the next fragment loads.
        unsigned frag[K_STEPS][4];
#pragma unroll
        for (int ks = 0; ks < K_STEPS; ++ks) {
          wgmma_wait<K_STEPS - 1>();
          if (ks == K_STEPS - 1 && prev_stage >= 0) release(empty_bar + 8 * prev_stage, lane);
          const unsigned b_stage = b_smem + stage * B_STAGE_BYTES + ks * MMA_K * SWIZZLE_BYTES;
          frag[ks][0] = round_to_tf32(ld_shared_u32(b_stage + frag_off[0][0]));
          frag[ks][1] = round_to_tf32(ld_shared_u32(b_stage + frag_off[1][0]));
          frag[ks][2] = round_to_tf32(ld_shared_u32(b_stage + frag_off[0][1]));
          frag[ks][3] = round_to_tf32(ld_shared_u32(b_stage + frag_off[1][1]));
          wgmma_fence();
          const unsigned long long a = desc_a0 + ((stage * A_STAGE_BYTES + ks * 32) >> 4);
          mma_tf32(acc[0], frag[ks], a, (kt > w.kt_begin || ks > 0) ? 1 : 0);
          wgmma_commit();
        }
        fence_accumulators(acc[0]);
      } else {
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < K_STEPS; ++ks) {
          const unsigned long long a = desc_a0 + ((stage * A_STAGE_BYTES + ks * A_K_STEP_BYTES) >> 4);
          const unsigned long long b = desc_b0 + ((stage * B_STAGE_BYTES + ks * B_K_STEP_BYTES) >> 4);
          mma_step<BF16>(acc, a, b, (kt > w.kt_begin || ks > 0) ? 1 : 0);
          if constexpr (ROW_SUMS) {
#pragma unroll
            for (int s = 0; s < M_SUBS; ++s)
              mma_ones<BF16>(rows[s], a + s * (A_BLOCK_BYTES >> 4), ones, (kt > w.kt_begin || ks > 0) ? 1 : 0);
          }
        }
        wgmma_commit();
        // This K-tile's MMAs stay in flight; the previous one's are done, so its stage is free.
        wgmma_wait<1>();
        fence_accumulators(acc);
        if (prev_stage >= 0) release(empty_bar + 8 * prev_stage, lane);
      }
      prev_stage = stage;
      if (++stage == STAGES) stage = 0, phase ^= 1;
    }
    // The other ping-pong consumer's next unit may issue its MMAs now.
    if (PINGPONG && unit + sched.step < sched.units) named_barrier_arrive(ORDER_BARRIER + 1 - consumer, 2 * WG_THREADS);
    if (!EARLY_ISSUE) wgmma_wait<0>();  // (EARLY_ISSUE: only the next unit's first MMAs may be in flight, into part)
    fence_accumulators(acc);
    if (prev_stage >= 0) release(empty_bar + 8 * prev_stage, lane);
    if constexpr (ROW_SUMS) {
      fence_accumulators(rows);
      if (write_rows) {
        if (lane % 4 == 0) {  // column 0 of rows thread_row and thread_row + 8 of each block
#pragma unroll
          for (int s = 0; s < M_SUBS; ++s)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int row = tile_m * BM + thread_row + 64 * s + 8 * h;
              if (row < w.g.M) sched.row_sums[row] = to_out(rows[s][2 * h], sched.row_sums);
            }
        }
      }
    }
    if (STREAM_K && w.parts == 0) continue;  // an empty stream-K run
    // An empty K slice (the host avoids them) adds zero; a promoted unit's sums start from zero.
    if (!PROMOTE && w.kt_begin >= w.kt_end) zero_accumulators(acc);
    if constexpr (FP8) {
      // Before split-K's sum: the scales are the same for every K slice. (Tested at run time as
      // well: without a branch ptxas spilled 40-48 B of the 128x256 and 128x192p consumers.)
      if constexpr (TRANSPOSED) {
        if (sched.scales.a != nullptr)
          scale_transposed(acc, sched.scales, tensor_scale, tile_m * BM + wg_m0, tile_n * BN + wg_n0, w.g.M, w.g.N, warp, lane);
      } else if (!BLOCK_SCALES && sc.a != nullptr) {
        if (per_tensor(sc))
          scale_all(acc, tensor_scale);
        else if constexpr (HOLD_SCALES)
          apply_row_col_scales(acc, held);
        else
          apply_row_col_scales(acc, load_row_col_scales(sc, tile_m * BM + thread_row, tile_n * BN + thread_col, w.g.M, w.g.N));
      }
    }
    if ((sched.splits > 1 || (STREAM_K && w.parts > 1)) &&
        !split_k_reduce(acc, w, sched, consumer, workspace, counters, split_flags)) {
      if constexpr (EARLY_ISSUE) wgmma_wait<0>();  // (see the loop's end)
      continue;  // another unit of this tile finishes it
    }

    if (w.g.c_tma) {
      if (sched.table != nullptr && w.g.c != c_fenced && threadIdx.x % WG_THREADS == 0) {
        tensormap_acquire(w.g.c);  // only the leader issues the stores
        c_fenced = w.g.c;
      }
      c_tma_used = true;
      const unsigned buf = epi_smem + consumer * EPI_BOXES * EPI_BOX_BYTES;
      if constexpr (TRANSPOSED) {
        store_tile_tma_transposed<OutT>(acc[0], buf, w.g.c, tile_m * BM + wg_m0, tile_n * BN + wg_n0,
                                        w.matrix, consumer, warp, lane, sched.bias, w.g.N);
      } else {
#pragma unroll
        for (int s = 0; s < M_SUBS; ++s)
          store_tile_tma<OutT>(acc[s], buf, w.g.c, tile_m * BM + wg_m0 + 64 * s, tile_n * BN + wg_n0,
                               w.matrix, consumer, warp, lane, epi_staged, sched.bias, w.g.N);
      }
      if constexpr (EARLY_ISSUE) wgmma_wait<0>();  // (see the loop's end)
      continue;
    }
    const int M = w.g.M, N = w.g.N, ldc = w.g.ldc;
    OutT* const C = w.g.C + w.matrix * w.g.c_batch;
    if constexpr (TRANSPOSED) {
      // C that TMA cannot address: element stores from the transposed accumulator layout
      // (thread rows are C columns transposed_column(..), its columns C rows 2 (lane % 4) + 8 j, +1).
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int col = tile_n * BN + wg_n0 + transposed_column(warp, h, lane / 4);
        if (col >= N) continue;
        const float b = bias_pair(sched.bias, col, N).x;
#pragma unroll
        for (int j = 0; j < MMA_N / 8; ++j)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int row = tile_m * BM + wg_m0 + 8 * j + 2 * (lane % 4) + e;
            if (row < M) C[static_cast<long long>(row) * ldc + col] = to_out(acc[0][4 * j + 2 * h + e] + b, C);
          }
      }
      continue;
    }
    // Output pairs can be stored as one vector when C's rows keep pairs aligned.
    const bool c_pairs = (ldc % 2 == 0) && (reinterpret_cast<uintptr_t>(C) % (2 * sizeof(OutT)) == 0);
    // C that TMA cannot address (unaligned rows): straight from the wgmma accumulator layout,
    // 16 rows per warp; each thread holds column pairs (2 * (lane % 4) + 8 j) of rows
    // lane / 4 and lane / 4 + 8.
    const int row0 = tile_m * BM + wg_m0 + warp * 16 + lane / 4;
    const int col0 = tile_n * BN + wg_n0 + 2 * (lane % 4);
#pragma unroll
    for (int s = 0; s < M_SUBS; ++s)
#pragma unroll
      for (int half_rows = 0; half_rows < 2; ++half_rows) {
        const int row = row0 + 64 * s + 8 * half_rows;
        if (row >= M) continue;
        OutT* const c_row = C + static_cast<long long>(row) * ldc;
#pragma unroll
        for (int j = 0; j < WG_N / 8; ++j) {
          const int col = col0 + 8 * j;
          const float2 b = bias_pair(sched.bias, col, N);
          if (col < N)
            store2(c_row + col, acc[s][slot(4 * j + 2 * half_rows)] + b.x, acc[s][slot(4 * j + 2 * half_rows + 1)] + b.y,
                   c_pairs && col + 1 < N, col + 1 < N);
        }
      }
    // EARLY_ISSUE: the next unit's first MMAs, issued before this epilogue, waited for at its
    // every end: ptxas tracks a wgmma's registers from its issue to a wait it can see on every
    // path, and otherwise waits at once (its C7517 info).
    if constexpr (EARLY_ISSUE) wgmma_wait<0>();
  }
  // The last stores must have read their shared-memory boxes before the block exits (their
  // global writes complete with the kernel, as for any store).
  if (c_tma_used && threadIdx.x % WG_THREADS == 0) bulk_wait_read<0>();
}

// independent: this grid reads and writes nothing the grid before it in the stream writes (the
// next GEMM of a streams-mode call, launched as that grid's programmatic dependent), so it
// starts without waiting for that grid and waits for it only before it exits: its own
// completion still implies that grid's, as stream order promises whatever waits on the stream.
template <bool BF16, typename OutT>
__device__ __forceinline__ void gemm(const Scheduler<OutT>& sched, float* workspace, int* counters,
                                     bool independent = false) {
  extern __shared__ unsigned char smem_raw[];
  const unsigned smem_base = (smem_u32(smem_raw) + ALIGN_SLACK - 1) & ~unsigned(ALIGN_SLACK - 1);
  const unsigned a_smem = smem_base;                         // STAGES x A_STAGE_BYTES
  const unsigned b_smem = smem_base + STAGES * A_STAGE_BYTES;  // STAGES x B_STAGE_BYTES
  const unsigned epi_smem = smem_base + STAGES * STAGE_BYTES;  // EPI_BYTES
  const unsigned full_bar = epi_smem + EPI_BYTES;              // STAGES x 8 B
  const unsigned empty_bar = full_bar + STAGES * 8;            // STAGES x 8 B
  // SPLIT_FLAG_BYTES after the barriers, addressed generically (volatile int reads).
  volatile int* const split_flags = reinterpret_cast<volatile int*>(
      smem_raw + (empty_bar + STAGES * 8 - smem_u32(smem_raw)));
  const unsigned ones_smem = (empty_bar + STAGES * 8 + SPLIT_FLAG_BYTES + 127) & ~127u;  // 256 B
  // BLOCK_SCALES (no ones): a scale slot a stage after the flags (16-byte aligned: the barriers are).
  const unsigned scale_smem = empty_bar + STAGES * 8 + SPLIT_FLAG_BYTES;

  // Broadcast from lane 0: the compiler then knows it is warp-uniform and keeps what derives
  // from it (each consumer's wgmma descriptors, ring stage and phase) in uniform registers,
  // so a K-tile's wgmmas issue back to back (NOTES.md, "A warp-uniform warpgroup index").
  const int warpgroup = __shfl_sync(0xffffffffu, threadIdx.x / WG_THREADS, 0);
  // The next grid in the stream may launch at once (a programmatic dependent waits for this
  // grid itself where it must): a launch reaches the GPU ~0.6 us after the grid before it has
  // triggered, so a trigger after this block's set-up would space a chain of grids wider.
  grid_launch_dependents();

  if (threadIdx.x == 0) {
    // The maps are kernel parameters (nothing the grid before writes): fetch them first, so
    // the producer's first loads find them (NOTES.md, "The start of a small GEMM").
    if (sched.table == nullptr) {
      tma_prefetch_descriptor(sched.single.a);
      tma_prefetch_descriptor(sched.single.b);
      if (sched.single.c_tma) tma_prefetch_descriptor(sched.single.c);
    }
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar + 8 * s, BLOCK_SCALES ? 1 + 32 : 1);  // the producer's expect_tx (+ the 32 lanes staging scales)
      mbar_init(empty_bar + 8 * s, CLUSTER * SLICES * 4);  // the warps reading it, cluster-wide
    }
    mbar_init_fence();
  }
  if constexpr (ROW_SUMS) {
    if (threadIdx.x < 64) {  // 256 B of ones of the input type, read by wgmma (the async proxy)
      asm volatile("st.shared.u32 [%0], %1;" ::"r"(ones_smem + 4 * threadIdx.x), "r"(BF16 ? 0x3F803F80u : 0x3C003C00u));
      fence_proxy_async();
    }
  }
  // Peers arrive on these barriers and multicast into this CTA: all must be initialised first.
  if constexpr (CLUSTER > 1) cluster_sync(); else __syncthreads();
  // Launched as a programmatic dependent (registry.dependent_launch: problems that fit in L2;
  // NOTES.md, "Programmatic dependent launch"), the grid gets here while the grid before it
  // in the stream may still run: every thread waits for it before its first global read or write
  // (A, B, C, the split-K workspace and counters, a grouped launch's table). Without the
  // attribute this is a no-op.
  if (!independent) grid_dependency_wait();

  if (warpgroup == 0) {
    // ---- Producer: one thread keeps the ring full, across tiles.
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      // Multicast masks: the CTAs of this one's row of tiles (same rank_m: A) and column (B).
      const int rank_m = sched.rank_m(), rank_n = sched.rank_n();  // read once: the K loop uses them
      unsigned short row_mask = 0, column_mask = 0;
      for (int j = 0; j < CLUSTER_N; ++j) row_mask |= 1u << (rank_m + CLUSTER_M * j);
      for (int i = 0; i < CLUSTER_M; ++i) column_mask |= 1u << (i + CLUSTER_M * rank_n);
      const TensorMap* fenced = nullptr;
      int stage = 0;
      unsigned phase = 0;
      for (int unit = sched.first(); unit < sched.units; unit += sched.step) {
        const Work<OutT> w = sched.work(unit);
        const int tile_m = w.tile_m, tile_n = w.tile_n;
        const TensorMap* const tmap_a = w.g.a;
        const TensorMap* const tmap_b = w.g.b;
        if (sched.table != nullptr && tmap_a != fenced) {  // a new GEMM of the table
          tensormap_acquire(tmap_a);
          tensormap_acquire(tmap_b);
          fenced = tmap_a;
        }
        if (sched.table != nullptr && unit + sched.step < sched.units) {
          // The next unit's maps, if it starts another GEMM: fetched while this one loads.
          const Gemm<OutT> next = sched.gemm_of(unit + sched.step);
          if (next.a != tmap_a) {
            tma_prefetch_descriptor(next.a);
            tma_prefetch_descriptor(next.b);
          }
        }
        for (int kt = w.kt_begin; kt < w.kt_end; ++kt) {
          // Free in every CTA of the cluster: this thread's shares land in its row and column.
          mbar_wait(empty_bar + 8 * stage, phase ^ 1);
          const unsigned bar = full_bar + 8 * stage;
          mbar_arrive_expect_tx(bar, STAGE_BYTES);  // the whole stage: this CTA's shares and the peers'
          const int a_row = rank_n * A_SHARE_ROWS;
          const unsigned a_dst = a_smem + stage * A_STAGE_BYTES + a_row * SWIZZLE_BYTES;
#ifdef ZOO_CONV
          load_conv_tiles(a_dst, b_smem + stage * B_STAGE_BYTES, tmap_a, tmap_b, bar, *w.g.conv, tile_m * BM,
                          tile_n * BN, kt);
#elif defined(ZOO_A_M_MAJOR)
          (void)a_dst;
          // A^T's columns tile_m * BM.. in boxes of 64, K-tile rows kt * BK..: each CTA of a
          // cluster row loads 1/CLUSTER_N of every box's rows and multicasts its share.
          const int a_k = rank_n * (BK / CLUSTER_N);
          load_column_boxes<BM / BOX_COLS, (CLUSTER_N > 1)>(a_smem + stage * A_STAGE_BYTES + a_k * SWIZZLE_BYTES,
                                                             A_BOX_BYTES, tmap_a, bar, tile_m * BM, kt * BK + a_k,
                                                             w.matrix, row_mask);
#else
          if constexpr (CLUSTER_N > 1)
            tma_load_3d_multicast(a_dst, tmap_a, bar, kt * BK, tile_m * BM + a_row, w.matrix, row_mask);
          else
            tma_load_3d(a_dst, tmap_a, bar, kt * BK, tile_m * BM, w.matrix);
#endif
#if defined(ZOO_B_K_MAJOR) && !defined(ZOO_CONV)
          // B^T's rows tile_n * BN.. are this tile's columns of B, K-major: each CTA of a cluster
          // column loads 1/CLUSTER_M of them and multicasts its share.
          const int b_row = rank_m * (BN / CLUSTER_M);
          const unsigned b_dst = b_smem + stage * B_STAGE_BYTES + b_row * SWIZZLE_BYTES;
          if constexpr (CLUSTER_M > 1)
            tma_load_3d_multicast(b_dst, tmap_b, bar, kt * BK, tile_n * BN + b_row, w.matrix, column_mask);
          else
            tma_load_3d(b_dst, tmap_b, bar, kt * BK, tile_n * BN, w.matrix);
#elif !defined(ZOO_CONV)
          const int b_row = rank_m * B_SHARE_ROWS;
          load_column_boxes<BN / BOX_COLS, (CLUSTER_M > 1)>(b_smem + stage * B_STAGE_BYTES + b_row * SWIZZLE_BYTES,
                                                             B_BOX_BYTES, tmap_b, bar, tile_n * BN, kt * BK + b_row,
                                                             w.matrix, column_mask);
#endif
          if (++stage == STAGES) stage = 0, phase ^= 1;
        }
      }
      if constexpr (CLUSTER > 1) {
        // No CTA may leave while a peer can still arrive on its barriers or multicast into it:
        // once every stage's last fill is freed, by the consumers of the whole cluster, no peer
        // will (its consumers' last arrivals are in; its loads into this CTA were all consumed
        // here). A wait for the ring, not a cluster barrier at the end (CUTLASS's load tail).
        for (int i = 0; i < STAGES; ++i) {
          mbar_wait(empty_bar + 8 * stage, phase ^ 1);
          if (++stage == STAGES) stage = 0, phase ^= 1;
        }
      }
    } else if (BLOCK_SCALES && threadIdx.x / 32 == 1) {
      stage_block_scales(sched, full_bar, empty_bar, scale_smem, threadIdx.x % 32);
    }
  } else {
    consume<BF16>(a_smem, b_smem, epi_smem, full_bar, empty_bar, ones_smem, scale_smem, sched, warpgroup - 1,
                  workspace, counters, split_flags);
    // Only the consumers, which leave last: a producer warp whose idle lanes waited here would
    // stall its issuing lane until the grid before had finished (NOTES.md, "The streams
    // mode's launches").
    if (independent) grid_dependency_wait();
  }
}

}  // namespace zoo_sm90

// Two entry points per dtype pair: one GEMM or a batch of `batch` same-shape GEMMs from the
// kernel parameters (zoo.mm; zoo.bmm's batched mode), or a grouped launch over a table of
// GEMMs in global memory (zoo.bmm's grouped mode).
#define ZOO_SM90_ENTRY(NAME, BF16, OUT_T)                                                   \
  extern "C" __global__ void __launch_bounds__(zoo_sm90::THREADS, 1)                        \
      NAME(const __grid_constant__ zoo_sm90::TensorMap tmap_a,                               \
           const __grid_constant__ zoo_sm90::TensorMap tmap_b,                               \
           const __grid_constant__ zoo_sm90::TensorMap tmap_c, int c_tma,                    \
           OUT_T* __restrict__ C, const OUT_T* __restrict__ bias, OUT_T* __restrict__ row_sums, \
           int M, int N, int K, int ldc,                                                     \
           long long c_batch, int batch, int splits, int stream_k, int independent,          \
           const zoo_sm90::UnitLayout layout, float* workspace, int* counters) {             \
    const zoo_sm90::Gemm<OUT_T> g{&tmap_a, &tmap_b, &tmap_c, C, c_batch, M, N, K, ldc, c_tma, 0, nullptr}; \
    const int units = layout.per_matrix.d * batch;                                          \
    zoo_sm90::gemm<BF16, OUT_T>(zoo_sm90::Scheduler<OUT_T>(g, layout, nullptr, 1, units, splits, stream_k, bias, \
                                                           {}, row_sums),                   \
                                workspace, counters, independent != 0);                     \
  }                                                                                         \
  extern "C" __global__ void __launch_bounds__(zoo_sm90::THREADS, 1)                        \
      NAME##_grouped(const zoo_sm90::GroupEntry* __restrict__ table, int count, int units) { \
    const zoo_sm90::Gemm<OUT_T> none{};                                                     \
    zoo_sm90::gemm<BF16, OUT_T>(zoo_sm90::Scheduler<OUT_T>(none, {}, table, count, units, 1), \
                                nullptr, nullptr);                                          \
  }

// A convolution (ZOO_CONV): one implicit GEMM per launch, tmap_a an im2col map of the input.
#define ZOO_SM90_CONV_ENTRY(NAME, BF16, OUT_T)                                              \
  extern "C" __global__ void __launch_bounds__(zoo_sm90::THREADS, 1)                        \
      NAME(const __grid_constant__ zoo_sm90::TensorMap tmap_a,                               \
           const __grid_constant__ zoo_sm90::TensorMap tmap_b,                               \
           const __grid_constant__ zoo_sm90::TensorMap tmap_c, int c_tma,                    \
           OUT_T* __restrict__ C, const OUT_T* __restrict__ bias, int M, int N, int K, int ldc, \
           int splits, const __grid_constant__ zoo::ConvGeometry conv,                      \
           const zoo_sm90::UnitLayout layout, float* workspace, int* counters) {             \
    const zoo_sm90::Gemm<OUT_T> g{&tmap_a, &tmap_b, &tmap_c, C, 0, M, N, K, ldc, c_tma, 0, &conv}; \
    zoo_sm90::gemm<BF16, OUT_T>(zoo_sm90::Scheduler<OUT_T>(g, layout, nullptr, 1, layout.per_matrix.d, splits, 0, bias), \
                                workspace, counters);                                       \
  }

// A scaled FP8 GEMM (ZOO_FP8; zoo.scaled_mm): the one-GEMM entry's arguments with the
// scales (Scales) after the bias; no grouped entry.
#define ZOO_SM90_FP8_ENTRY(NAME, OUT_T)                                                     \
  extern "C" __global__ void __launch_bounds__(zoo_sm90::THREADS, 1)                        \
      NAME(const __grid_constant__ zoo_sm90::TensorMap tmap_a,                               \
           const __grid_constant__ zoo_sm90::TensorMap tmap_b,                               \
           const __grid_constant__ zoo_sm90::TensorMap tmap_c, int c_tma,                    \
           OUT_T* __restrict__ C, const OUT_T* __restrict__ bias, const float* __restrict__ scale_a, \
           const float* __restrict__ scale_b, int sa_row, int sa_k, int sb_k, int sb_col, \
           int M, int N, int K, int ldc, long long c_batch, int batch, int splits, int stream_k, \
           int independent, const zoo_sm90::UnitLayout layout, float* workspace, int* counters) { \
    const zoo_sm90::Gemm<OUT_T> g{&tmap_a, &tmap_b, &tmap_c, C, c_batch, M, N, K, ldc, c_tma, 0, nullptr}; \
    const zoo_sm90::Scales scales{scale_a, scale_b, sa_row, sa_k, sb_k, sb_col};              \
    zoo_sm90::gemm<false, OUT_T>(zoo_sm90::Scheduler<OUT_T>(g, layout, nullptr, 1, layout.per_matrix.d * batch, splits, \
                                                            stream_k, bias, scales),        \
                                 workspace, counters, independent != 0);                    \
  }

#if defined(ZOO_FP8)
ZOO_SM90_FP8_ENTRY(zoo_scaled_sm90_e4m3_bf16out, __nv_bfloat16)
ZOO_SM90_FP8_ENTRY(zoo_scaled_sm90_e4m3_f16out, half)
ZOO_SM90_FP8_ENTRY(zoo_scaled_sm90_e4m3_f32out, float)
#elif defined(ZOO_CONV)
ZOO_SM90_CONV_ENTRY(zoo_conv_sm90_f16_f16out, false, half)
ZOO_SM90_CONV_ENTRY(zoo_conv_sm90_f16_f32out, false, float)
ZOO_SM90_CONV_ENTRY(zoo_conv_sm90_bf16_bf16out, true, __nv_bfloat16)
ZOO_SM90_CONV_ENTRY(zoo_conv_sm90_bf16_f32out, true, float)
#elif defined(ZOO_TF32)
ZOO_SM90_ENTRY(zoo_gemm_sm90_tf32, false, float)
#else
ZOO_SM90_ENTRY(zoo_gemm_sm90_f16_f16out, false, half)
ZOO_SM90_ENTRY(zoo_gemm_sm90_f16_f32out, false, float)
ZOO_SM90_ENTRY(zoo_gemm_sm90_bf16_bf16out, true, __nv_bfloat16)
ZOO_SM90_ENTRY(zoo_gemm_sm90_bf16_f32out, true, float)
#endif

#if !defined(__CUDACC_RTC__) && !defined(ZOO_TF32) && !defined(ZOO_CONV) && !defined(ZOO_FP8)
// Host launchers for nvcc builds (zoo export: a shared library for ctypes); the zoo itself
// launches the kernels above through the Driver API (zoo/cuda.py builds the same tensor maps).
// Each returns a cudaError_t code, 0 on success. A, B, C row-major and packed; TMA needs
// 16-byte rows, so K and N must be multiples of 8 (else cudaErrorInvalidValue). The launch is
// persistent (one block per SM), without split-K; cluster configs are not exported.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cstring>

namespace zoo_sm90_host {

static int encode(zoo_sm90::TensorMap* out, CUtensorMapDataType type, const void* base, int rows,
                  int cols, int elem_bytes, int box_rows, int box_cols) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled = nullptr;
  if (!encode_tiled) {
    cudaDriverEntryPointQueryResult found;
    ZOO_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled",
                                                    reinterpret_cast<void**>(&encode_tiled), 12000,
                                                    cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess) return static_cast<int>(cudaErrorNotSupported);
  }
  CUtensorMap map;  // 3-D, as the kernel reads them: a batch of one matrix
  const cuuint64_t row_bytes = static_cast<cuuint64_t>(cols) * elem_bytes;
  const cuuint64_t dims[3] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows), 1};
  const cuuint64_t strides[2] = {row_bytes, row_bytes * rows};
  const cuuint32_t box[3] = {static_cast<cuuint32_t>(box_cols), static_cast<cuuint32_t>(box_rows), 1};
  const cuuint32_t unit[3] = {1, 1, 1};
  const CUresult rc = encode_tiled(&map, type, 3, const_cast<void*>(base), dims, strides, box, unit,
                                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (rc != CUDA_SUCCESS) return static_cast<int>(cudaErrorInvalidValue);
  static_assert(sizeof(CUtensorMap) == sizeof(zoo_sm90::TensorMap), "a tensor map is 128 bytes");
  std::memcpy(out, &map, sizeof(map));
  return 0;
}

template <typename T> constexpr CUtensorMapDataType tma_type();
template <> constexpr CUtensorMapDataType tma_type<half>() { return CU_TENSOR_MAP_DATA_TYPE_FLOAT16; }
template <> constexpr CUtensorMapDataType tma_type<__nv_bfloat16>() { return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; }
template <> constexpr CUtensorMapDataType tma_type<float>() { return CU_TENSOR_MAP_DATA_TYPE_FLOAT32; }

template <typename T, typename OutT, typename Kernel>
static int launch(Kernel kernel, const T* A, const T* B, OutT* C, int M, int N, int K,
                  cudaStream_t stream) {
  using namespace zoo_sm90;
  if (M <= 0 || N <= 0 || K <= 0 || K % 8 || N % 8 || reinterpret_cast<uintptr_t>(A) % 16 ||
      reinterpret_cast<uintptr_t>(B) % 16)
    return static_cast<int>(cudaErrorInvalidValue);
  if (CLUSTER != 1) return static_cast<int>(cudaErrorNotSupported);
  const int smem_rc = zoo::raise_smem_limit_once(reinterpret_cast<const void*>(kernel), SMEM_BYTES);
  if (smem_rc) return smem_rc;
  TensorMap map_a, map_b, map_c;
  int rc = encode(&map_a, tma_type<T>(), A, M, K, sizeof(T), BM, BK);
  if (!rc) rc = encode(&map_b, tma_type<T>(), B, K, N, sizeof(T), BK, BOX_COLS);
  // C through TMA when its rows are 16-byte aligned, else direct stores (as zoo/gemm.py).
  const int c_tma = reinterpret_cast<uintptr_t>(C) % 16 == 0 && (static_cast<long long>(N) * sizeof(OutT)) % 16 == 0;
  std::memset(&map_c, 0, sizeof(map_c));
  if (!rc && c_tma)
    rc = encode(&map_c, tma_type<OutT>(), C, M, N, sizeof(OutT), C_BOX_ROWS, SWIZZLE_BYTES / static_cast<int>(sizeof(OutT)));  // one staging box
  if (rc) return rc;
  int device = 0, sms = 0;
  ZOO_CUDA_CHECK(cudaGetDevice(&device));
  ZOO_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int units = zoo::ceil_div(M, BM) * zoo::ceil_div(N, BN);
  UnitLayout layout = plain_layout(M, N, K, 1);  // the kernel divides by the multipliers
  layout.per_matrix = zoo::divisor_of(layout.per_matrix.d), layout.splits = zoo::divisor_of(1);
  layout.per_group = zoo::divisor_of(layout.per_group.d), layout.last_rows = zoo::divisor_of(layout.last_rows.d);
  kernel<<<units < sms ? units : sms, THREADS, SMEM_BYTES, stream>>>(map_a, map_b, map_c, c_tma, C, nullptr, nullptr, M,
                                                                      N, K, N, 0LL, 1, 1, 0, 0, layout, nullptr, nullptr);
  ZOO_CUDA_CHECK(cudaGetLastError());
  return 0;
}

}  // namespace zoo_sm90_host

extern "C" int zoo_gemm_sm90(const half* A, const half* B, float* C, int M, int N, int K,
                             cudaStream_t stream) {
  return zoo_sm90_host::launch(zoo_gemm_sm90_f16_f32out, A, B, C, M, N, K, stream);
}
extern "C" int zoo_gemm_sm90_half(const half* A, const half* B, half* C, int M, int N, int K,
                                  cudaStream_t stream) {
  return zoo_sm90_host::launch(zoo_gemm_sm90_f16_f16out, A, B, C, M, N, K, stream);
}
extern "C" int zoo_gemm_sm90_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M,
                                  int N, int K, cudaStream_t stream) {
  return zoo_sm90_host::launch(zoo_gemm_sm90_bf16_f32out, A, B, C, M, N, K, stream);
}
extern "C" int zoo_gemm_sm90_bf16_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B,
                                       __nv_bfloat16* C, int M, int N, int K, cudaStream_t stream) {
  return zoo_sm90_host::launch(zoo_gemm_sm90_bf16_bf16out, A, B, C, M, N, K, stream);
}
#endif
