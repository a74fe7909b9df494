#version 450
// RMSNorm of one row per workgroup: statistics in f32, the normalized value
// rounded to the activation type before the weight (as the portable kernel
// rounds to its input's type).
#include "common.glsl"
#include "reduce.glsl"

layout(local_size_x = ETLLM_VK_ROW_THREADS) in;
layout(std140, set = 0, binding = 1) uniform ParamsBlock { RmsNormParams p; };
layout(std430, set = 0, binding = 2) readonly buffer XBuf { ACT x[]; };
layout(std430, set = 0, binding = 3) readonly buffer WBuf { float w[]; };
layout(std430, set = 0, binding = 4) writeonly buffer YBuf { ACT y[]; };

void main() {
  const uint row = flatGroup();
  if (row >= p.m0 + p.mS * g.S)
    return;
  const uint tid = gl_LocalInvocationID.x;
  const int xb = affine(p.xOff, p.xOffS) + int(row * p.xStride);
  const int yb = affine(p.yOff, p.yOffS) + int(row * p.yStride);
  float ss = 0.0;
  for (uint i = tid; i < p.d; i += RT) {
    float v = float(x[xb + int(i)]);
    ss += v * v;
  }
  ss = groupSum(ss);
  const float inv = 1.0 / sqrt(ss / float(p.d) + p.eps);
  for (uint i = tid; i < p.d; i += RT) {
    float h = float(ACT(float(x[xb + int(i)]) * inv));
    if (p.hasWeight != 0u)
      h *= w[i] + p.weightOffset;
    y[yb + int(i)] = ACT(h);
  }
}
