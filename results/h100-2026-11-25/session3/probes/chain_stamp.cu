// Chain probe (session 3): launch_stamp.cu of session 1 with the GEMM's register budget as an
// option. Each block's thread 0 records when it started (%globaltimer), its launch tag and block;
// every thread spins spin_ns from that start, then waits for the grid before it (a programmatic
// dependent that never waits at its start, as the streams mode's independent GEMMs).
// HOG > 0: each thread keeps HOG values live across the spin, so ptxas allocates about as many
// registers as the GEMM launches with (168 a thread at 384 threads).
// PF_PARAM: thread 0 prefetches the by-value parameter as a tensor map through its generic
// address (as the GEMM does with its __grid_constant__ maps). SETMAXNREG: warpgroup 0 drops to
// 40 registers, the others rise to 232 (as the GEMM). MEM: every thread streams `stream_elems`
// floats of `src` during its spin (the memory system as busy as under running GEMMs).
#ifndef HOG
#define HOG 0
#endif
#ifndef PF_PARAM
#define PF_PARAM 0
#endif
#ifndef SETMAXNREG
#define SETMAXNREG 0
#endif
#ifndef MEM
#define MEM 0
#endif
struct alignas(64) Pad { unsigned long long w[64]; };

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void __launch_bounds__(384, 1)
stamp(unsigned long long* rec, unsigned* count, int tag, long long spin_ns, const __grid_constant__ Pad pad,
      const float* src, long long stream_elems) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#if PF_PARAM
  if (threadIdx.x == 0) asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<unsigned long long>(&pad)) : "memory");
#endif
#if SETMAXNREG
  const bool producer = threadIdx.x / 128 == 0;
  if (producer) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
  else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
#else
  const bool producer = false;
#endif
  __shared__ unsigned long long start;
  extern __shared__ unsigned char smem[];
  if (threadIdx.x == 0) {
    start = now_ns();
    const unsigned slot = atomicAdd(count, 1u);
    rec[2 * slot] = start;
    rec[2 * slot + 1] = static_cast<unsigned long long>(tag) | (static_cast<unsigned long long>(blockIdx.x) << 32);
    if (pad.w[0] == 12345) smem[0] = 1;
  }
  __syncthreads();
  float acc = 0;
#if HOG
  float v[HOG];
  if (!producer) {
#pragma unroll
    for (int i = 0; i < HOG; ++i) v[i] = __int_as_float(threadIdx.x * (i + 3));
  }
#endif
  long long e = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) * 4;
  while (now_ns() < start + spin_ns) {
#if MEM
    for (int r = 0; r < 8; ++r, e += 4LL * 384 * 1024) {
      e &= stream_elems - 1;  // a power of two; e stays a multiple of 4
      const float4 v = *reinterpret_cast<const float4*>(src + e);
      acc += v.x + v.y + v.z + v.w;
    }
#endif
#if HOG
    if (!producer) {
#pragma unroll
      for (int i = 0; i < HOG; ++i) asm volatile("" : "+f"(v[i]));
    }
#endif
  }
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (acc == 1.2345f) rec[1] = 1;
#if HOG
  if (!producer) {
    float s = 0;
#pragma unroll
    for (int i = 0; i < HOG; ++i) s += v[i];
    if (s == 1.2345f) rec[0] = 1;
  }
#endif
}
