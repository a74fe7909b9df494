#version 450
// Matrix products of many rows (prefill): 32 x 32 output tiles, 256
// threads computing 2 x 2 outputs each, K in steps of 32 through shared
// memory (weights dequantized to f32 on the way in).
#include "common.glsl"
#include "matmul_common.glsl"

layout(local_size_x = 16, local_size_y = 16) in;

#define TILE ETLLM_VK_GEMM_TILE
shared float xs[TILE][TILE + 1];
shared float ws[2][TILE][TILE + 1]; // gate (or the only) rows, up rows

// Loads weight rows [rowBase, rowBase + TILE) x columns [k0, k0 + TILE)
// of the rows starting at `rowOffset` into ws[which].
void loadW(uint which, uint rowOffset, uint j0, uint k0, uint tid) {
  const uint K = p.k;
#if WFMT == 2
  // 32 rows x 4 words of 8 values; k0 is a multiple of 32 (one group).
  if (tid < TILE * 4u) {
    uint rr = tid / 4u, wq = tid % 4u;
    uint j = j0 + rr;
    if (j < p.n) {
      uint row = rowOffset + j;
      uint word = w[row * (K / 8u) + k0 / 8u + wq];
      float s = q4Scale(row, k0 / 32u);
      for (int i = 0; i < 8; ++i)
        ws[which][rr][wq * 8u + uint(i)] =
            s * (float((word >> (4 * i)) & 15u) - 8.0);
    } else {
      for (int i = 0; i < 8; ++i)
        ws[which][rr][wq * 8u + uint(i)] = 0.0;
    }
  }
#else
  for (uint e = tid; e < TILE * TILE; e += 256u) {
    uint rr = e / TILE, kk = e % TILE;
    uint j = j0 + rr, k = k0 + kk;
    float v = 0.0;
    if (j < p.n && k < K) {
      uint row = rowOffset + j;
#if WFMT == 0
      v = w[row * K + k];
#else
      vec2 pair = unpackHalf2x16(w[(row * K + k) / 2u]);
      v = (k & 1u) == 0u ? pair.x : pair.y;
#endif
    }
    ws[which][rr][kk] = v;
  }
#endif
}

void main() {
  const uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  const uint tid = ty * 16u + tx;
  const uint j0 = gl_WorkGroupID.x * TILE, m0 = gl_WorkGroupID.y * TILE;
  const uint M = rowsM(), K = p.k;
  if (m0 >= M) // the bucket's grid covers more rows than this call has
    return;
  const bool swiglu = (p.epilogue & ETLLM_VK_EPILOGUE_SWIGLU) != 0u;
  const int xBase = affine(p.xOff, p.xOffS);
  float acc[2][2][2]; // [gate/up][row][col]
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 2; ++b) {
      acc[0][a][b] = 0.0;
      acc[1][a][b] = 0.0;
    }
  for (uint k0 = 0u; k0 < K; k0 += TILE) {
    for (uint e = tid; e < TILE * TILE; e += 256u) {
      uint rr = e / TILE, kk = e % TILE;
      uint m = m0 + rr, k = k0 + kk;
      xs[rr][kk] = m < M && k < K ? float(x[xBase + int(m * p.xStride + k)])
                                  : 0.0;
    }
    loadW(0u, 0u, j0, k0, tid);
    if (swiglu)
      loadW(1u, p.n, j0, k0, tid);
    barrier();
    for (uint kk = 0u; kk < TILE; ++kk) {
      float xa = xs[ty * 2u][kk], xb = xs[ty * 2u + 1u][kk];
      float wa = ws[0][tx * 2u][kk], wb = ws[0][tx * 2u + 1u][kk];
      acc[0][0][0] += xa * wa;
      acc[0][0][1] += xa * wb;
      acc[0][1][0] += xb * wa;
      acc[0][1][1] += xb * wb;
      if (swiglu) {
        float ua = ws[1][tx * 2u][kk], ub = ws[1][tx * 2u + 1u][kk];
        acc[1][0][0] += xa * ua;
        acc[1][0][1] += xa * ub;
        acc[1][1][0] += xb * ua;
        acc[1][1][1] += xb * ub;
      }
    }
    barrier();
  }
  for (uint a = 0u; a < 2u; ++a)
    for (uint b = 0u; b < 2u; ++b) {
      uint m = m0 + ty * 2u + a, j = j0 + tx * 2u + b;
      if (m < M && j < p.n)
        storeOutput(m, j, acc[0][a][b], acc[1][a][b]);
    }
}
