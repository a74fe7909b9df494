#version 450
// Matrix-vector products for a few rows (decoding): each workgroup computes
// ETLLM_VK_GEMV_ROWS output columns for every row m < M (M <= GEMV_MAX_M),
// its threads striding over K, the sums reduced in shared memory.
#include "common.glsl"
#include "matmul_common.glsl"

layout(local_size_x = ETLLM_VK_GEMV_THREADS) in;

#define NT ETLLM_VK_GEMV_THREADS
#define MAXM ETLLM_VK_GEMV_MAX_M
// Weight rows per workgroup: two output columns, each with its up row when
// the epilogue is swiglu.
#define NW (2u * ETLLM_VK_GEMV_ROWS)
shared float red[MAXM * NW][NT];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint j0 = flatGroup() * ETLLM_VK_GEMV_ROWS;
  const uint M = min(rowsM(), MAXM);
  const bool swiglu = (p.epilogue & ETLLM_VK_EPILOGUE_SWIGLU) != 0u;
  const uint nw = swiglu ? NW : ETLLM_VK_GEMV_ROWS;
  const int xBase = affine(p.xOff, p.xOffS);
  float acc[MAXM][NW];
  for (uint m = 0u; m < MAXM; ++m)
    for (uint c = 0u; c < NW; ++c)
      acc[m][c] = 0.0;
  uint rowOf[NW];
  for (uint c = 0u; c < NW; ++c) {
    uint col = j0 + c % ETLLM_VK_GEMV_ROWS;
    rowOf[c] = c < ETLLM_VK_GEMV_ROWS ? col : p.n + col;
  }
  const uint K = p.k;
#if WFMT == 0
  for (uint k = tid; k < K; k += NT) {
    float xv[MAXM];
    for (uint m = 0u; m < M; ++m)
      xv[m] = float(x[xBase + int(m * p.xStride + k)]);
    for (uint c = 0u; c < nw; ++c) {
      if (j0 + c % ETLLM_VK_GEMV_ROWS >= p.n)
        continue;
      float wv = w[rowOf[c] * K + k];
      for (uint m = 0u; m < M; ++m)
        acc[m][c] += xv[m] * wv;
    }
  }
#elif WFMT == 1
  const uint K2 = K / 2u;
  for (uint kp = tid; kp < K2; kp += NT) {
    vec2 xv[MAXM];
    for (uint m = 0u; m < M; ++m) {
      int at = xBase + int(m * p.xStride + 2u * kp);
      xv[m] = vec2(float(x[at]), float(x[at + 1]));
    }
    for (uint c = 0u; c < nw; ++c) {
      if (j0 + c % ETLLM_VK_GEMV_ROWS >= p.n)
        continue;
      vec2 wv = unpackHalf2x16(w[rowOf[c] * K2 + kp]);
      for (uint m = 0u; m < M; ++m)
        acc[m][c] += dot(xv[m], wv);
    }
  }
#else
  const uint K8 = K / 8u;
  for (uint wi = tid; wi < K8; wi += NT) {
    float xv[MAXM][8];
    for (uint m = 0u; m < M; ++m) {
      int at = xBase + int(m * p.xStride + 8u * wi);
      for (int i = 0; i < 8; ++i)
        xv[m][i] = float(x[at + i]);
    }
    for (uint c = 0u; c < nw; ++c) {
      if (j0 + c % ETLLM_VK_GEMV_ROWS >= p.n)
        continue;
      uint word = w[rowOf[c] * K8 + wi];
      float s = q4Scale(rowOf[c], wi / 4u);
      for (uint m = 0u; m < M; ++m) {
        float part = 0.0;
        for (int i = 0; i < 8; ++i)
          part += xv[m][i] * (float((word >> (4 * i)) & 15u) - 8.0);
        acc[m][c] += part * s;
      }
    }
  }
#endif
  for (uint m = 0u; m < MAXM; ++m)
    for (uint c = 0u; c < NW; ++c)
      red[m * NW + c][tid] = acc[m][c];
  barrier();
  for (uint stride = NT / 2u; stride > 0u; stride >>= 1u) {
    if (tid < stride)
      for (uint a = 0u; a < MAXM * NW; ++a)
        red[a][tid] += red[a][tid + stride];
    barrier();
  }
  if (tid < M * ETLLM_VK_GEMV_ROWS) {
    uint m = tid / ETLLM_VK_GEMV_ROWS, c = tid % ETLLM_VK_GEMV_ROWS;
    uint j = j0 + c;
    if (j < p.n)
      storeOutput(m, j, red[m * NW + c][0],
                  swiglu ? red[m * NW + ETLLM_VK_GEMV_ROWS + c][0] : 0.0);
  }
}
