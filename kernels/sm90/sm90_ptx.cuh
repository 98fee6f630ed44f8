// sm90_ptx.cuh: the Hopper (sm_90a) instructions the zoo's TMA/WGMMA kernels use, one thin
// inline-PTX wrapper each: mbarrier, TMA (cp.async.bulk.tensor), wgmma and setmaxnreg.
// Names follow the PTX ISA so a reader can look each one up; comments say why it is there.
#pragma once

#include "common/zoo_common.cuh"

namespace zoo_sm90 {

// A CUtensorMap as the kernel sees it: 128 opaque bytes, 64-byte aligned, built on the host by
// cuTensorMapEncodeTiled (zoo/cuda.py) and passed by value as a __grid_constant__ parameter.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- mbarrier: a full/empty pair per pipeline stage.

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}

// Makes the initialised barriers visible to the async proxy (the TMA unit) and the cluster.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// The producer's arrival: counts one arrival and announces the bytes the TMA will deliver.
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}

// Waits until the phase with the given parity has completed. A fresh barrier counts its
// (virtual) previous phase, parity 1, as complete: the producer's first pass through the
// empty barriers does not block.
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile(
        "{ .reg .pred p;\n"
        "  mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "  selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// ---- cp.async (LDGSTS): 4 bytes from global into shared memory, zero-filled where `bytes` is
// 0, tracked by an mbarrier: cp_async_arrive makes the barrier count one arrival of this thread
// once all of its earlier cp.async copies have landed (.noinc: the init count includes it).
__device__ __forceinline__ void cp_async_4(unsigned dst, const void* src, unsigned bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_arrive(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}

// ---- TMA: one box from global memory into shared memory, completing on an mbarrier.
// Coordinates are (column, row, matrix) of the box's first element; parts outside the tensor
// are zero-filled and still counted in the barrier's transaction bytes.

// A tensor map the host wrote into global memory (a grouped launch's table) must be fenced
// into the tensormap proxy before TMA first reads it.
__device__ __forceinline__ void tensormap_acquire(const TensorMap* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.sys [%0], 128;" ::"l"(
                   reinterpret_cast<unsigned long long>(map))
               : "memory");
}

__device__ __forceinline__ void tma_prefetch_descriptor(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// A line of global memory fetched into L1 ahead of its loads (no fault past an allocation).
__device__ __forceinline__ void prefetch_l1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];" ::"l"(reinterpret_cast<unsigned long long>(p)));
}

// Tensor maps are 3-D: (columns, rows, matrices of a batch); one GEMM is a batch of one.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TensorMap* map, unsigned bar,
                                            int col, int row, int matrix) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(col), "r"(row), "r"(matrix)
      : "memory");
}

// A 4-D tiled map (the convolution's weights, K x R x S x C): the box at (c, s, r, k).
__device__ __forceinline__ void tma_load_4d(unsigned dst, const TensorMap* map, unsigned bar, int c,
                                            int s, int r, int k) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c), "r"(s), "r"(r), "r"(k)
      : "memory");
}

// Im2col mode (4-D NHWC map from cuTensorMapEncodeIm2col): the map's pixelsPerColumn pixels
// starting at input position (n, h + off_h, w + off_w), walked along W, then H, then images
// through the map's bounding box at its element strides (the conv stride), channels c.. of each:
// one box row per output pixel; positions outside the image read as zero.
__device__ __forceinline__ void tma_load_im2col_4d(unsigned dst, const TensorMap* map, unsigned bar,
                                                   int c, int w, int h, int n, unsigned short off_w,
                                                   unsigned short off_h) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n),
      "h"(off_w), "h"(off_h)
      : "memory");
}

// The same box delivered to the same shared-memory offset of every CTA in `cta_mask`, each
// CTA's mbarrier (same offset) receiving the bytes that land in it.
__device__ __forceinline__ void tma_load_3d_multicast(unsigned dst, const TensorMap* map,
                                                      unsigned bar, int col, int row, int matrix,
                                                      unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(bar), "r"(col), "r"(row), "r"(matrix),
      "h"(cta_mask)
      : "memory");
}

// ---- TMA store: a box from shared memory to global memory (parts outside the tensor are
// not written), tracked by bulk groups of the issuing thread.

__device__ __forceinline__ void tma_store_3d(const TensorMap* map, unsigned src, int col, int row,
                                             int matrix) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(src), "r"(col), "r"(row), "r"(matrix)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until at most PENDING groups still read their shared-memory source (the buffer is reusable).
template <int PENDING>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(PENDING) : "memory");
}

// Ordinary shared-memory stores made visible to the async proxy (TMA, wgmma).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// A barrier for `threads` threads (a multiple of 32) on hardware barrier `id` (1-15; 0 is
// __syncthreads).
__device__ __forceinline__ void named_barrier(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// Counts this warp in on barrier `id` without waiting: the signalling side of a barrier
// whose other `threads` - 32 x (arriving warps) wait in named_barrier.
__device__ __forceinline__ void named_barrier_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- Clusters: rank, ids, a cluster-wide barrier and arrivals on a peer CTA's mbarrier.

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_count() {
  unsigned r;
  asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
  return r;
}

// Programmatic dependent launch (a launch with the programmatic-stream-serialization
// attribute may start while the grid before it in the stream finishes): wait until that
// grid has completed and its memory is visible (a no-op without the attribute), and let the
// next such grid start once every block of this one has said so.
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void grid_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

// Every thread of every CTA in the cluster; orders shared-memory work across the cluster.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Arrive on the mbarrier at the same offset in CTA `rank` of this cluster. Default (CTA)
// release semantics: the arrival only says "done reading", and a .release.cluster fence on
// every arrival made the 2-CTA kernel 1.8x slower (NOTES.md).
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

// ---- setmaxnreg: the producer warpgroup gives registers back, the consumers take them.

template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
}

// ---- wgmma: shared-memory matrix descriptors and the asynchronous warpgroup MMA.

// Descriptor of a 128-byte-swizzled operand tile (PTX ISA, "Matrix Descriptor Format"):
// start address, leading- and stride-dimension byte offsets (all >> 4), layout type 1 =
// 128B swizzle. Tiles start on 1024-byte boundaries (a whole swizzle atom: 8 rows x 128 B),
// so the base-offset field stays 0.
__device__ __forceinline__ unsigned long long sw128_descriptor(unsigned smem_addr, unsigned lbo,
                                                               unsigned sbo) {
  return static_cast<unsigned long long>((smem_addr & 0x3FFFF) >> 4) |
         (static_cast<unsigned long long>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<unsigned long long>((sbo & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(PENDING) : "memory");
}

// Keeps the compiler from moving accumulator reads or writes across an async MMA.
template <int N>
__device__ __forceinline__ void fence_accumulators(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// The same for a consumer's row blocks of accumulators.
template <int R, int N>
__device__ __forceinline__ void fence_accumulators(float (&d)[R][N]) {
#pragma unroll
  for (int r = 0; r < R; ++r) fence_accumulators(d[r]);
}

#define ZOO_ACC8(i)                                                                         \
  "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]),           \
      "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define ZOO_ACC64(i)                                                                        \
  ZOO_ACC8(i + 0), ZOO_ACC8(i + 8), ZOO_ACC8(i + 16), ZOO_ACC8(i + 24), ZOO_ACC8(i + 32),   \
      ZOO_ACC8(i + 40), ZOO_ACC8(i + 48), ZOO_ACC8(i + 56)
#define ZOO_ACC128 ZOO_ACC64(0), ZOO_ACC64(64)
#define ZOO_ACC96 ZOO_ACC64(0), ZOO_ACC8(64), ZOO_ACC8(72), ZOO_ACC8(80), ZOO_ACC8(88)
#define ZOO_REGS64                                                                          \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                  \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "        \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "        \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define ZOO_REGS128                                                                         \
  ZOO_REGS64 ", "                                                                           \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "        \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "        \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, "  \
  "%111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, "    \
  "%125, %126, %127"

// D(64xN, f32) (+)= A(64x16) * B(16xN), both from shared memory. `accumulate` = 0 overwrites
// D (a tile's first K-step needs no zeroed registers). TYPE is "f16" or "bf16"; TRANS the
// imm-trans-a, imm-trans-b pair; DA, DB, SCALE the operand numbers after the N/2 accumulators
// REGS; the accumulators' constraints come last.
#define ZOO_WGMMA(N, TYPE, TRANS, DA, DB, SCALE, REGS, ...)                                 \
  asm volatile(                                                                             \
      "{ .reg .pred p;\n"                                                                   \
      "  setp.ne.b32 p, %" #SCALE ", 0;\n"                                                  \
      "  wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" REGS "},"      \
      " %" #DA ", %" #DB ", p, 1, 1, " TRANS "; }"                                          \
      : __VA_ARGS__                                                                         \
      : "l"(desc_a), "l"(desc_b), "r"(accumulate))

// NAME<N, BF16>::mma(d, desc_a, desc_b, accumulate): one wgmma m64nNk16 of either 16-bit type.
#define ZOO_WGMMA_WRAPPER(NAME, N, TRANS, DA, DB, SCALE, REGS, ...)                         \
  template <bool BF16>                                                                      \
  struct NAME<N, BF16> {                                                                    \
    static __device__ __forceinline__ void mma(float (&d)[N / 2], unsigned long long desc_a, \
                                               unsigned long long desc_b, int accumulate) { \
      if constexpr (BF16) {                                                                 \
        ZOO_WGMMA(N, "bf16", TRANS, DA, DB, SCALE, REGS, __VA_ARGS__);                      \
      } else {                                                                              \
        ZOO_WGMMA(N, "f16", TRANS, DA, DB, SCALE, REGS, __VA_ARGS__);                       \
      }                                                                                     \
    }                                                                                       \
  };

#define ZOO_REGS96                                                                          \
  ZOO_REGS64 ", "                                                                           \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "        \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define ZOO_ACC4(i) "+f"(d[i + 0]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define ZOO_ACC16 ZOO_ACC8(0), ZOO_ACC8(8)
#define ZOO_ACC32 ZOO_ACC8(0), ZOO_ACC8(8), ZOO_ACC8(16), ZOO_ACC8(24)
#define ZOO_REGS4 "%0, %1, %2, %3"
#define ZOO_REGS8 ZOO_REGS4 ", %4, %5, %6, %7"
#define ZOO_REGS16 ZOO_REGS8 ", %8, %9, %10, %11, %12, %13, %14, %15"
#define ZOO_REGS32 \
  ZOO_REGS16 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"

// The main loop's wgmma: A K-major, B N-major (imm-trans-b = 1). ZOO_B_K_MAJOR builds (the
// convolution's weights, K_out rows of R*S*C) read B K-major instead: imm-trans-b = 0.
// ZOO_A_M_MAJOR builds (A given column-major) read A M-major: imm-trans-a = 1.
#if defined(ZOO_A_M_MAJOR) && defined(ZOO_B_K_MAJOR)
#define ZOO_TRANS_AB "1, 0"
#elif defined(ZOO_A_M_MAJOR)
#define ZOO_TRANS_AB "1, 1"
#elif defined(ZOO_B_K_MAJOR)
#define ZOO_TRANS_AB "0, 0"
#else
#define ZOO_TRANS_AB "0, 1"
#endif
template <int N, bool BF16>
struct Wgmma;  // N = 64, 128, 192 or 256 columns per warpgroup
ZOO_WGMMA_WRAPPER(Wgmma, 256, ZOO_TRANS_AB, 128, 129, 130, ZOO_REGS128, ZOO_ACC128)
ZOO_WGMMA_WRAPPER(Wgmma, 192, ZOO_TRANS_AB, 96, 97, 98, ZOO_REGS96, ZOO_ACC96)
ZOO_WGMMA_WRAPPER(Wgmma, 128, ZOO_TRANS_AB, 64, 65, 66, ZOO_REGS64, ZOO_ACC64(0))
ZOO_WGMMA_WRAPPER(Wgmma, 64, ZOO_TRANS_AB, 32, 33, 34, ZOO_REGS32, ZOO_ACC32)

// FP8 (ZOO_FP8 builds): D(64xN, f32) (+)= A(64x32, e4m3) * B(32xN, e4m3), both K-major in
// shared memory (FP8 wgmma takes no transpose operands): a k32 step is 32 bytes along a
// 128-byte swizzled row, as a k16 step of 16-bit elements.
#define ZOO_WGMMA_FP8(N, DA, DB, SCALE, REGS, ...)                                           \
  asm volatile(                                                                             \
      "{ .reg .pred p;\n"                                                                   \
      "  setp.ne.b32 p, %" #SCALE ", 0;\n"                                                  \
      "  wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {" REGS "},"              \
      " %" #DA ", %" #DB ", p, 1, 1; }"                                                     \
      : __VA_ARGS__                                                                         \
      : "l"(desc_a), "l"(desc_b), "r"(accumulate))
#define ZOO_WGMMA_FP8_WRAPPER(N, DA, DB, SCALE, REGS, ...)                                   \
  template <>                                                                               \
  struct WgmmaFp8<N> {                                                                      \
    static __device__ __forceinline__ void mma(float (&d)[N / 2], unsigned long long desc_a, \
                                               unsigned long long desc_b, int accumulate) { \
      ZOO_WGMMA_FP8(N, DA, DB, SCALE, REGS, __VA_ARGS__);                                   \
    }                                                                                       \
  };
template <int N>
struct WgmmaFp8;  // N = 64, 128, 192 or 256 columns per warpgroup (swap-AB: 8, 16, 32 or 64 rows)
ZOO_WGMMA_FP8_WRAPPER(256, 128, 129, 130, ZOO_REGS128, ZOO_ACC128)
ZOO_WGMMA_FP8_WRAPPER(192, 96, 97, 98, ZOO_REGS96, ZOO_ACC96)
ZOO_WGMMA_FP8_WRAPPER(128, 64, 65, 66, ZOO_REGS64, ZOO_ACC64(0))
ZOO_WGMMA_FP8_WRAPPER(64, 32, 33, 34, ZOO_REGS32, ZOO_ACC32)
// Swap-AB FP8 tiles (N = C rows): the GEMM's B box is wgmma's A, its A rows wgmma's B, both
// K-major as FP8 wgmma reads them.
ZOO_WGMMA_FP8_WRAPPER(32, 16, 17, 18, ZOO_REGS16, ZOO_ACC16)
ZOO_WGMMA_FP8_WRAPPER(16, 8, 9, 10, ZOO_REGS8, ZOO_ACC8(0))
ZOO_WGMMA_FP8_WRAPPER(8, 4, 5, 6, ZOO_REGS4, ZOO_ACC4(0))

// Swap-AB: A(64x16) M-major (imm-trans-a = 1), B(16xN) K-major (imm-trans-b = 0), N = 8..64:
// A is a 64-column box of the GEMM's B stage, B the GEMM's A rows, so D is a transposed slice
// of C with as few as 8 of its rows.
// ZOO_B_K_MAJOR builds read the B box K-major: imm-trans-a = 0.
#ifdef ZOO_B_K_MAJOR
#define ZOO_TRANS_SWAP "0, 0"
#else
#define ZOO_TRANS_SWAP "1, 0"
#endif
template <int N, bool BF16>
struct WgmmaSwapAB;  // N = 8, 16, 32 or 64 rows of C per warpgroup
ZOO_WGMMA_WRAPPER(WgmmaSwapAB, 8, ZOO_TRANS_SWAP, 4, 5, 6, ZOO_REGS4, ZOO_ACC4(0))
ZOO_WGMMA_WRAPPER(WgmmaSwapAB, 16, ZOO_TRANS_SWAP, 8, 9, 10, ZOO_REGS8, ZOO_ACC8(0))
ZOO_WGMMA_WRAPPER(WgmmaSwapAB, 32, ZOO_TRANS_SWAP, 16, 17, 18, ZOO_REGS16, ZOO_ACC16)
ZOO_WGMMA_WRAPPER(WgmmaSwapAB, 64, ZOO_TRANS_SWAP, 32, 33, 34, ZOO_REGS32, ZOO_ACC32)

// D(64xN, f32) (+)= A(64x8, tf32, registers) * B(8xN, tf32, shared memory, K-major). wgmma
// reads tf32 only K-major from shared memory; A from registers may come from any layout. The
// fragment is 4 words per thread: (row g, k t), (g + 8, t), (g, t + 4), (g + 8, t + 4) of the
// warp's 16 rows (g = lane / 4, t = lane % 4); fp32 bits are used as tf32 (low mantissa
// bits ignored), as TMA-loaded fp32 in shared memory is.
#define ZOO_WGMMA_TF32(N, REGS, ACC, A0, A1, A2, A3, DB, SCALE)                              \
  asm volatile(                                                                             \
      "{ .reg .pred p;\n"                                                                   \
      "  setp.ne.b32 p, %" #SCALE ", 0;\n"                                                  \
      "  wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {" REGS "},"               \
      " {%" #A0 ", %" #A1 ", %" #A2 ", %" #A3 "},"                                         \
      " %" #DB ", p, 1, 1; }"                                                               \
      : ACC                                                                                 \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate))

template <int N>
struct WgmmaTf32;  // N = 128, 192 or 256 columns per warpgroup

template <>
struct WgmmaTf32<256> {
  static __device__ __forceinline__ void mma(float (&d)[128], const unsigned (&a)[4],
                                             unsigned long long desc_b, int accumulate) {
    ZOO_WGMMA_TF32(256, ZOO_REGS128, ZOO_ACC128, 128, 129, 130, 131, 132, 133);
  }
};

template <>
struct WgmmaTf32<192> {
  static __device__ __forceinline__ void mma(float (&d)[96], const unsigned (&a)[4],
                                             unsigned long long desc_b, int accumulate) {
    ZOO_WGMMA_TF32(192, ZOO_REGS96, ZOO_ACC96, 96, 97, 98, 99, 100, 101);
  }
};

template <>
struct WgmmaTf32<128> {
  static __device__ __forceinline__ void mma(float (&d)[64], const unsigned (&a)[4],
                                             unsigned long long desc_b, int accumulate) {
    ZOO_WGMMA_TF32(128, ZOO_REGS64, ZOO_ACC64(0), 64, 65, 66, 67, 68, 69);
  }
};

// fp32 bits rounded to the nearest tf32 (the register operand; wgmma would truncate them).
__device__ __forceinline__ unsigned round_to_tf32(unsigned bits) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(bits)));
  return r;
}

__device__ __forceinline__ unsigned ld_shared_u32(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint2 ld_shared_u32x2(unsigned addr) {
  uint2 v;
  asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr) : "memory");
  return v;
}

}  // namespace zoo_sm90
