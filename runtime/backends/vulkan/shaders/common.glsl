// Shared by every Vulkan kernel: the activation type, the per-call globals,
// the per-bucket push constants and small helpers. Compiled by glslc at
// build time with -DACT_F16 for the f16 variants (CMakeLists.txt).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require

#include "params.h"

#ifdef ACT_F16
#define ACT float16_t
#else
#define ACT float
#endif

layout(std140, set = 0, binding = 0) uniform GlobalsBlock { Globals g; };

// Set when the command buffer of a sequence-length bucket is recorded:
// `mode` (SDPA: 1 = split-KV partials, 0 = direct) and the bucket's S.
layout(push_constant) uniform PushBlock {
  uint mode;
  uint bucket;
} pc;

// The linear id of this workgroup in a grid folded into x and y (grids of
// more than 65535 workgroups use y).
uint flatGroup() {
  return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

int affine(int off, int offS) { return off + offS * int(g.S); }

float silu(float v) { return v / (1.0 + exp(-v)); }
