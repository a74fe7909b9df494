#version 450
// A 4-D strided copy (layout changes) with a conversion between f32 and
// f16 (SRC_F16, DST_F16).
#include "common.glsl"

layout(local_size_x = ETLLM_VK_FLAT_THREADS) in;
layout(std140, set = 0, binding = 1) uniform ParamsBlock { CopyParams p; };
#ifdef SRC_F16
layout(std430, set = 0, binding = 2) readonly buffer SBuf { float16_t src[]; };
#else
layout(std430, set = 0, binding = 2) readonly buffer SBuf { float src[]; };
#endif
#ifdef DST_F16
layout(std430, set = 0, binding = 3) writeonly buffer DBuf { float16_t dst[]; };
#else
layout(std430, set = 0, binding = 3) writeonly buffer DBuf { float dst[]; };
#endif

void main() {
  uint n[4] = uint[4](p.n0, p.n1, p.n2, p.n3);
  if (p.dyn < 4u)
    n[p.dyn] *= g.S;
  uint i = flatGroup() * ETLLM_VK_FLAT_THREADS + gl_LocalInvocationID.x;
  if (i >= n[0] * n[1] * n[2] * n[3])
    return;
  uint i3 = i % n[3], r = i / n[3];
  uint i2 = r % n[2];
  r /= n[2];
  uint i1 = r % n[1], i0 = r / n[1];
  int s = affine(p.srcOff, p.srcOffS) +
          int(i0 * p.ss0 + i1 * p.ss1 + i2 * p.ss2 + i3 * p.ss3);
  int d = affine(p.dstOff, p.dstOffS) +
          int(i0 * p.ds0 + i1 * p.ds1 + i2 * p.ds2 + i3 * p.ds3);
#ifdef DST_F16
  dst[d] = float16_t(float(src[s]));
#else
  dst[d] = float(src[s]);
#endif
}
