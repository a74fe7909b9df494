#version 450
// Rows of a table gathered by index, one index per workgroup. A table
// split over several bindings is read by one dispatch per part: each
// writes the rows whose index falls in its part.
// WFMT: 0 f32, 1 f16, 2 q4 (format.h WeightFormat).
#include "common.glsl"

layout(local_size_x = ETLLM_VK_ROW_THREADS) in;
layout(std140, set = 0, binding = 1) uniform ParamsBlock { EmbeddingParams p; };
layout(std430, set = 0, binding = 2) readonly buffer IBuf { int idx[]; };
#if WFMT == 0
layout(std430, set = 0, binding = 3) readonly buffer WBuf { float w[]; };
#else
layout(std430, set = 0, binding = 3) readonly buffer WBuf { uint w[]; };
#endif
layout(std430, set = 0, binding = 4) writeonly buffer YBuf { ACT y[]; };

void main() {
  const uint m = flatGroup();
  if (m >= p.m0 + p.mS * g.S)
    return;
  const int tok = idx[affine(p.iOff, p.iOffS) + int(m)];
  if (tok < int(p.rowBegin) || tok >= int(p.rowBegin + p.rows))
    return;
  const uint row = uint(tok) - p.rowBegin;
  const int yb = affine(p.yOff, p.yOffS) + int(m * p.yStride);
  for (uint i = gl_LocalInvocationID.x; i < p.d; i += ETLLM_VK_ROW_THREADS) {
    uint e = row * p.d + i;
#if WFMT == 0
    float v = w[e];
#elif WFMT == 1
    vec2 pair = unpackHalf2x16(w[e / 2u]);
    float v = (e & 1u) == 0u ? pair.x : pair.y;
#else
    uint q = (w[e / 8u] >> (4u * (e % 8u))) & 15u;
    uint si = e / 32u;
    vec2 sp = unpackHalf2x16(w[p.wScaleOff + si / 2u]);
    float v = ((si & 1u) == 0u ? sp.x : sp.y) * (float(q) - 8.0);
#endif
    y[yb + int(i)] = ACT(v);
  }
}
