// legacy_peak.cu: the legacy tensor-core ceiling of the GPU in hand, per SM cycle.
//
//   Each warp issues ITERS x CHAINS independent MMAs on register operands (no memory traffic)
//   between two clock64() reads; block 0..gridDim.x-1 write their cycle counts. What an SM can
//   retire per cycle this way bounds every HMMA kernel (sm75 WMMA, sm80 mma.sync) on that GPU,
//   whatever its clock: scripts/legacy_peak.py turns it into FLOP per SM-cycle.
//   mma_sync_peak: mma.sync m16n8k16 f16 -> f32 (CC >= 8.0); wmma_peak: WMMA m16n16k16 (CC >= 7.5).

#include <cuda_fp16.h>
#include <mma.h>

constexpr int CHAINS = 16;  // independent accumulators per warp: covers the MMA latency

extern "C" __global__ void mma_sync_peak(float* out, long long* cycles, int iters) {
#if __CUDA_ARCH__ >= 800
  unsigned a[4], b[2];
  for (int i = 0; i < 4; ++i) a[i] = threadIdx.x * 0x10001u + i;
  for (int i = 0; i < 2; ++i) b[i] = threadIdx.x * 0x10003u + i;
  float acc[CHAINS][4] = {};
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                   : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  float s = 0.f;  // keeps the MMAs live
  for (int c = 0; c < CHAINS; ++c) s += acc[c][0] + acc[c][1] + acc[c][2] + acc[c][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
#endif
}

extern "C" __global__ void wmma_peak(float* out, long long* cycles, int iters) {
  using namespace nvcuda;
  __shared__ __align__(32) half tile[16 * 16];
  for (int i = threadIdx.x; i < 256; i += blockDim.x) tile[i] = __float2half(0.001f * i);
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
  wmma::load_matrix_sync(fa, tile, 16);
  wmma::load_matrix_sync(fb, tile, 16);
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[CHAINS / 2];  // 2 HMMA.16816 each
  for (int c = 0; c < CHAINS / 2; ++c) wmma::fill_fragment(acc[c], 0.f);
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int c = 0; c < CHAINS / 2; ++c) wmma::mma_sync(acc[c], fa, fb, acc[c]);
  }
  __syncthreads();
  const long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
  float s = 0.f;
  for (int c = 0; c < CHAINS / 2; ++c)
    for (int e = 0; e < acc[c].num_elements; ++e) s += acc[c].x[e];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
