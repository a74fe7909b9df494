#version 450
// Merges the split-KV partials of one (head, query) per workgroup.
#include "common.glsl"

layout(local_size_x = ETLLM_VK_SDPA_THREADS) in;
layout(std140, set = 0, binding = 1) uniform ParamsBlock { SdpaCombineParams p; };
layout(std430, set = 0, binding = 2) readonly buffer PartBuf { float part[]; };
layout(std430, set = 0, binding = 3) writeonly buffer OBuf { ACT o[]; };

void main() {
  const uint h = gl_WorkGroupID.x, s = gl_WorkGroupID.y;
  if (s >= g.S)
    return;
  const uint stride = p.dv + 2u;
  const uint base = p.partialOff + (h * g.S + s) * p.splits * stride;
  float mx = -1.0 / 0.0;
  for (uint z = 0u; z < p.splits; ++z)
    mx = max(mx, part[base + z * stride]);
  float l = 0.0;
  if (mx != -1.0 / 0.0)
    for (uint z = 0u; z < p.splits; ++z) {
      float mz = part[base + z * stride];
      if (mz != -1.0 / 0.0)
        l += part[base + z * stride + 1u] * exp(mz - mx);
    }
  const int ob = affine(p.oOff, p.oOffS) + int(h * p.oStrideH + s * p.oStrideS);
  for (uint d = gl_LocalInvocationID.x; d < p.dv; d += ETLLM_VK_SDPA_THREADS) {
    float sum = 0.0;
    if (l > 0.0)
      for (uint z = 0u; z < p.splits; ++z) {
        float mz = part[base + z * stride];
        if (mz != -1.0 / 0.0)
          sum += part[base + z * stride + 2u + d] * exp(mz - mx);
      }
    o[ob + int(d)] = ACT(l > 0.0 ? sum / l : 0.0);
  }
}
