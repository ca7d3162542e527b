// Row blur with a transposed store: the source of the sample trace in this folder.
// The trace was written in the Accel-Sim tracer's format by us, not recorded on a GPU.
__global__ void blur_rows(const float *in, float *out, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y;
  float left = in[y * width + max(x - 1, 0)];
  float mid = in[y * width + x];
  float right = in[y * width + min(x + 1, width - 1)];
  out[x * height + y] = (left + mid + right) / 3.0f;
}
