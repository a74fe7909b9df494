#version 450
// Rotary position embedding of 1-3 tensors in one dispatch (JOBS): the
// query heads, the key heads written straight into the key cache at their
// positions, the value heads copied into the value cache (rotate = 0).
// Workgroup (s, h, job); cos and sin come from the table the runtime
// computed at init, as the portable kernel computes them.
#include "common.glsl"

layout(local_size_x = ETLLM_VK_ROW_THREADS) in;
layout(std140, set = 0, binding = 1) uniform ParamsBlock { RopeParams p; };
layout(std430, set = 0, binding = 2) readonly buffer PBuf { int positions[]; };
layout(std430, set = 0, binding = 3) readonly buffer TBuf { float table[]; };
layout(std430, set = 0, binding = 4) readonly buffer S0 { ACT src0[]; };
layout(std430, set = 0, binding = 5) writeonly buffer D0 { ACT dst0[]; };
#if JOBS > 1
layout(std430, set = 0, binding = 6) readonly buffer S1 { ACT src1[]; };
layout(std430, set = 0, binding = 7) writeonly buffer D1 { ACT dst1[]; };
#endif
#if JOBS > 2
layout(std430, set = 0, binding = 8) readonly buffer S2 { ACT src2[]; };
layout(std430, set = 0, binding = 9) writeonly buffer D2 { ACT dst2[]; };
#endif

float load(uint job, int at) {
#if JOBS > 2
  if (job == 2u)
    return float(src2[at]);
#endif
#if JOBS > 1
  if (job == 1u)
    return float(src1[at]);
#endif
  return float(src0[at]);
}

void store(uint job, uint at, float v) {
#if JOBS > 2
  if (job == 2u) {
    dst2[at] = ACT(v);
    return;
  }
#endif
#if JOBS > 1
  if (job == 1u) {
    dst1[at] = ACT(v);
    return;
  }
#endif
  dst0[at] = ACT(v);
}

void main() {
  const uint s = gl_WorkGroupID.x, h = gl_WorkGroupID.y, job = gl_WorkGroupID.z;
  if (s >= g.S)
    return;
  // (Field by field: glslang mistranslates a copy of a std140 struct.)
#define JF(f) (job == 0u ? p.job0.f : job == 1u ? p.job1.f : p.job2.f)
  const uint heads = JF(heads), d = JF(d), rotate = JF(rotate);
  const uint toCache = JF(toCache), dstRows = JF(dstRows);
  if (h >= heads)
    return;
  const int pos = positions[s];
  const uint row = toCache != 0u ? uint(pos) : s;
  if (pos < 0 || uint(pos) >= p.tableRows || (toCache != 0u && row >= dstRows))
    return; // the runtime rejects such positions before the call
  const int sb = affine(JF(srcOff), JF(srcOffS)) +
                 int(h * JF(srcStrideH) + s * JF(srcStrideS));
  const uint db = JF(dstOff) + h * JF(dstStrideH) + row * JF(dstStrideS);
  const uint R = p.r;
  const uint tb = uint(pos) * R * 2u;
  for (uint i = gl_LocalInvocationID.x; i < d; i += ETLLM_VK_ROW_THREADS) {
    float v;
    if (rotate == 0u || i >= 2u * R) {
      v = load(job, sb + int(i));
    } else if (p.convention == 0u) { // rotate_half: i with i + R
      uint f = i < R ? i : i - R;
      float c = table[tb + 2u * f], sn = table[tb + 2u * f + 1u];
      float x1 = load(job, sb + int(f)), x2 = load(job, sb + int(f + R));
      v = i < R ? x1 * c - x2 * sn : x2 * c + x1 * sn;
    } else if (p.convention == 1u) { // interleaved: 2f with 2f + 1
      uint f = i / 2u;
      float c = table[tb + 2u * f], sn = table[tb + 2u * f + 1u];
      float x1 = load(job, sb + int(2u * f)), x2 = load(job, sb + int(2u * f + 1u));
      v = (i & 1u) == 0u ? x1 * c - x2 * sn : x2 * c + x1 * sn;
    } else { // deinterleave_rotate_half: reads (2f, 2f + 1), writes f, f + R
      uint f = i < R ? i : i - R;
      float c = table[tb + 2u * f], sn = table[tb + 2u * f + 1u];
      float x1 = load(job, sb + int(2u * f)), x2 = load(job, sb + int(2u * f + 1u));
      v = i < R ? x1 * c - x2 * sn : x2 * c + x1 * sn;
    }
    store(job, db + i, v);
  }
}
