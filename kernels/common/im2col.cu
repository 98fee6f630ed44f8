// im2col.cu: a convolution's im2col matrix, for conv2d's flat K (zoo/conv.py, FlatConvPlan).
//
// Small channel counts (the ResNet stem's 3) would waste the implicit GEMM's K-tiles, so conv2d
// writes x's im2col matrix and runs one GEMM on it. Row (n, p, q) of the matrix, column
// (r * S + s) * C + c holds x[n, c, p * stride_h - pad_h + r * dil_h, q * stride_w - pad_w +
// s * dil_w] (zero outside the image), zero from column R*S*C to the row's end (k_chunks
// 16-byte chunks). x is read through its strides (NCHW or channels-last, in place), 16 bits
// an element (fp16 and bf16 alike).
//
// Launch: grid (P, N), 256 threads, patch_bytes of dynamic shared memory: a block writes the
//   Q rows of one output row (n, p). It first copies the input patch that row reads (the
//   (R-1)*dil_h + 1 input rows from p * stride_h - pad_h, the columns from -pad_w, all C
//   channels; zero in the padding) into shared memory, channels innermost, reading x in
//   coalesced runs where x is channels-last; then each thread takes one chunk of every few
//   rows q, gathers its 8 elements from the patch through their offsets in it (a table, read
//   once into registers), and writes them as one 16-byte store (the block's rows are
//   consecutive: whole, coalesced chunks). The first build gathered each element from global
//   memory (a warp's scalar load touched a dozen sectors) and counted in 64 bits (divisions
//   emulated in software): no faster than torch's strided copy (NOTES.md, "A flat K for small
//   channel counts").

#define ZOO_IM2COL_MAX_K 2048

// The convolution's geometry, x's strides (elements) and the patch, by value (zoo/conv.py, Im2col).
struct ZooIm2col {
  long long rows;           // N * P * Q
  long long sn, sh, sw, sc; // x's strides: image, row, column, channel
  int H, W, C, P, Q, S;
  int k, k_chunks;          // R * S * C; 16-byte chunks a row of the matrix
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int patch_rows, patch_cols;  // the input rows and columns one output row reads
};

extern "C" __global__ void __launch_bounds__(256)
    zoo_im2col(const unsigned short* __restrict__ x, uint4* __restrict__ cols, const ZooIm2col g) {
  extern __shared__ unsigned short patch[];   // [patch_rows][patch_cols][C]
  __shared__ int offset[ZOO_IM2COL_MAX_K];    // column -> its element's place in the patch, at q = 0
  const int p = blockIdx.x, n = blockIdx.y;
  const int row_pitch = g.patch_cols * g.C;
  for (int col = threadIdx.x; col < g.k; col += blockDim.x) {
    const int tap = col / g.C, c = col - tap * g.C, r = tap / g.S, s = tap - r * g.S;
    offset[col] = r * g.dil_h * row_pitch + s * g.dil_w * g.C + c;
  }
  const unsigned short* const image = x + n * g.sn;
  const int h_first = p * g.stride_h - g.pad_h, w_first = -g.pad_w;
  // Offsets within an image fit 32 bits (the host checks). ncu on the stem: the copy's index
  // arithmetic (two divisions and 64-bit products an element) kept the SM 78% busy, so a
  // channels-last row, one run of x, is copied by position alone.
  const int sh = static_cast<int>(g.sh), sw = static_cast<int>(g.sw), sc = static_cast<int>(g.sc);
  const bool run = sc == 1 && sw == g.C;
  const int lo = -w_first * g.C, hi = (g.W - w_first) * g.C;  // a row's elements inside the image
  for (int rr = 0; rr < g.patch_rows; ++rr) {
    const int h = h_first + rr;
    unsigned short* const dst = patch + rr * row_pitch;
    const bool inside = h >= 0 && h < g.H;
    const unsigned short* const src = image + h * sh;
    for (int j = threadIdx.x; j < row_pitch; j += blockDim.x) {
      unsigned short v = 0;
      if (inside && j >= lo && j < hi) {
        if (run) {
          v = __ldg(src + w_first * g.C + j);
        } else {
          const int cc = j / g.C, c = j - cc * g.C;
          v = __ldg(src + (w_first + cc) * sw + c * sc);
        }
      }
      dst[j] = v;
    }
  }
  __syncthreads();
  // Thread t keeps chunk t % k_chunks of every `per_pass`-th row: its 8 columns' offsets stay in
  // registers, and a warp's lanes still write consecutive chunks.
  const int per_pass = blockDim.x / g.k_chunks;  // rows a pass of the block writes (k_chunks <= 256)
  if (threadIdx.x >= per_pass * g.k_chunks) return;
  const int chunk = threadIdx.x % g.k_chunks;
  int at[8];
#pragma unroll
  for (int e = 0; e < 8; ++e) at[e] = chunk * 8 + e < g.k ? offset[chunk * 8 + e] : -1;
  uint4* const out = cols + (static_cast<long long>(n) * g.P + p) * g.Q * g.k_chunks + chunk;
  for (int q = threadIdx.x / g.k_chunks; q < g.Q; q += per_pass) {
    const unsigned short* const row = patch + q * g.stride_w * g.C;
    unsigned word[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int e = 0; e < 8; ++e)
      if (at[e] >= 0) word[e / 2] |= static_cast<unsigned>(row[at[e]]) << (16 * (e % 2));
    out[static_cast<long long>(q) * g.k_chunks] = make_uint4(word[0], word[1], word[2], word[3]);
  }
}
