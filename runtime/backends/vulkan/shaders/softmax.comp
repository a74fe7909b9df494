#version 450
// Softmax over the last dimension, one row per workgroup, in f32.
#include "common.glsl"
#include "reduce.glsl"

layout(local_size_x = ETLLM_VK_ROW_THREADS) in;
layout(std140, set = 0, binding = 1) uniform ParamsBlock { SoftmaxParams p; };
layout(std430, set = 0, binding = 2) readonly buffer XBuf { ACT x[]; };
layout(std430, set = 0, binding = 3) writeonly buffer YBuf { ACT y[]; };

void main() {
  const uint row = flatGroup();
  if (row >= p.m0 + p.mS * g.S)
    return;
  const uint tid = gl_LocalInvocationID.x;
  const int xb = affine(p.xOff, p.xOffS) + int(row * p.xStride);
  const int yb = affine(p.yOff, p.yOffS) + int(row * p.yStride);
  float mx = -1.0 / 0.0;
  for (uint i = tid; i < p.d; i += RT)
    mx = max(mx, float(x[xb + int(i)]));
  mx = groupMax(mx);
  float sum = 0.0;
  for (uint i = tid; i < p.d; i += RT)
    sum += exp(float(x[xb + int(i)]) - mx);
  sum = groupSum(sum);
  for (uint i = tid; i < p.d; i += RT)
    y[yb + int(i)] = ACT(exp(float(x[xb + int(i)]) - mx) / sum);
}
