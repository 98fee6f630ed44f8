// upload.cu: copies bytes passed by value, as kernel parameters, into device memory.
//
// The zoo's grouped launches read a table of their problems (addresses, sizes, tensor maps)
// from device memory. Inside a CUDA graph capture that table cannot be copied from the host:
// a copy from pageable memory is refused during capture, and one from pinned memory would be
// read again at every replay, from a buffer nobody keeps. A kernel node keeps its parameters
// in the graph, so the table goes up as the parameters of a few of these launches (as
// torch's multi-tensor kernels pass their address lists). Eager calls use it too, where the
// table lives only as long as the call (zoo/batched.py).
//
// Launch: one block of 256 threads per chunk; dst 4-byte aligned, count <= ZOO_UPLOAD_WORDS.
// The parameters stay within the 4 KB every driver and arch takes (8 + 4 + 4000 bytes).

#define ZOO_UPLOAD_WORDS 1000

struct ZooUploadChunk {
  unsigned int words[ZOO_UPLOAD_WORDS];
};

extern "C" __global__ void zoo_upload(unsigned int* dst, int count, const ZooUploadChunk chunk) {
  for (int i = threadIdx.x; i < count; i += blockDim.x) dst[i] = chunk.words[i];
}
