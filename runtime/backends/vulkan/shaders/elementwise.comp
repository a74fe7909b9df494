#version 450
// Element-wise math on contiguous data, in f32.
#include "common.glsl"

layout(local_size_x = ETLLM_VK_FLAT_THREADS) in;
layout(std140, set = 0, binding = 1) uniform ParamsBlock { ElementwiseParams p; };
layout(std430, set = 0, binding = 2) readonly buffer ABuf { ACT a[]; };
layout(std430, set = 0, binding = 3) readonly buffer BBuf { ACT b[]; };
layout(std430, set = 0, binding = 4) writeonly buffer YBuf { ACT y[]; };

void main() {
  const uint i = flatGroup() * ETLLM_VK_FLAT_THREADS + gl_LocalInvocationID.x;
  if (i >= p.n0 + p.nS * g.S)
    return;
  float av = float(a[affine(p.aOff, p.aOffS) + int(i)]);
  float bv = 0.0;
  if (p.op != ETLLM_VK_ELEMENTWISE_SILU)
    bv = p.bScalar != 0u ? p.scalar : float(b[affine(p.bOff, p.bOffS) + int(i)]);
  float v;
  if (p.op == ETLLM_VK_ELEMENTWISE_ADD)
    v = av + bv;
  else if (p.op == ETLLM_VK_ELEMENTWISE_MUL)
    v = av * bv;
  else if (p.op == ETLLM_VK_ELEMENTWISE_SUB)
    v = av - bv;
  else if (p.op == ETLLM_VK_ELEMENTWISE_SILU)
    v = silu(av);
  else
    v = silu(av) * bv;
  y[affine(p.yOff, p.yOffS) + int(i)] = ACT(v);
}
