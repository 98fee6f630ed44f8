// im2col.cu: a convolution's im2col matrix, for conv2d's flat K (zoo/conv.py, FlatConvPlan).
//
// Small channel counts (the ResNet stem's 3) would waste the implicit GEMM's K-tiles, so conv2d
// writes x's im2col matrix and runs one GEMM on it. Row (n, p, q) of the matrix, column
// (r * S + s) * C + c holds x[n, c, p * stride_h - pad_h + r * dil_h, q * stride_w - pad_w +
// s * dil_w] (zero outside the image), zero from column R*S*C to the row's end (k_chunks
// 16-byte chunks). x is read through its strides (NCHW or channels-last, in place), 16 bits
// an element (fp16 and bf16 alike).
//
// Launch: any grid of 256-thread blocks; the threads take (row, chunk) pairs in turn, each
//   gathering the chunk's 8 elements and writing them as one 16-byte store, so the matrix is
//   written in whole, coalesced chunks. A block first tabulates each column's filter offsets
//   and channel (k <= ZOO_IM2COL_MAX_K columns) in shared memory, so a chunk costs a few
//   divisions per row, not per element. torch's strided copy wrote this matrix at ~0.6 TB/s
//   on an H200 (NOTES.md, "A flat K for small channel counts").

#define ZOO_IM2COL_MAX_K 2048

// The convolution's geometry and x's strides (elements), passed by value (zoo/conv.py, Im2col).
struct ZooIm2col {
  long long rows;           // N * P * Q
  long long sn, sh, sw, sc; // x's strides: image, row, column, channel
  int H, W, C, P, Q, S;
  int k, k_chunks;          // R * S * C; 16-byte chunks a row of the matrix
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
};

extern "C" __global__ void __launch_bounds__(256)
    zoo_im2col(const unsigned short* __restrict__ x, uint4* __restrict__ cols, const ZooIm2col g) {
  __shared__ int tap_h[ZOO_IM2COL_MAX_K], tap_w[ZOO_IM2COL_MAX_K];
  __shared__ long long channel[ZOO_IM2COL_MAX_K];
  for (int col = threadIdx.x; col < g.k; col += blockDim.x) {
    const int tap = col / g.C, c = col - tap * g.C, r = tap / g.S, s = tap - r * g.S;
    tap_h[col] = r * g.dil_h;
    tap_w[col] = s * g.dil_w;
    channel[col] = c * g.sc;
  }
  __syncthreads();
  const long long pairs = g.rows * g.k_chunks;
  const int pq = g.P * g.Q;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < pairs;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long row = i / g.k_chunks;
    const int chunk = static_cast<int>(i - row * g.k_chunks);
    const long long n = row / pq;
    const int pix = static_cast<int>(row - n * pq), p = pix / g.Q, q = pix - p * g.Q;
    const int h0 = p * g.stride_h - g.pad_h, w0 = q * g.stride_w - g.pad_w;
    const unsigned short* const image = x + n * g.sn;
    unsigned short v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int col = chunk * 8 + e;
      v[e] = 0;
      if (col < g.k) {
        const int h = h0 + tap_h[col], w = w0 + tap_w[col];
        if (h >= 0 && h < g.H && w >= 0 && w < g.W) v[e] = image[h * g.sh + w * g.sw + channel[col]];
      }
    }
    unsigned word[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) word[e] = v[2 * e] | (static_cast<unsigned>(v[2 * e + 1]) << 16);
    cols[i] = make_uint4(word[0], word[1], word[2], word[3]);
  }
}
