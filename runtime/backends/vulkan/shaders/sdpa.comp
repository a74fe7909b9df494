#version 450
// Attention of one query row of one head per workgroup (x: head, y: query,
// z: split), keys in blocks of ETLLM_VK_SDPA_THREADS with an online
// softmax, all in f32. Direct mode (pc.mode 0, prefill): every visible key,
// the output written to O. Split-KV mode (pc.mode 1, decoding): workgroup
// z covers keys [z * chunk, (z + 1) * chunk) and writes its partial (max,
// sum, unnormalized accumulators) for SDPA_COMBINE.
#include "common.glsl"
#define RT ETLLM_VK_SDPA_THREADS
#include "reduce.glsl"

layout(local_size_x = ETLLM_VK_SDPA_THREADS) in;
layout(std140, set = 0, binding = 1) uniform ParamsBlock { SdpaParams p; };
layout(std430, set = 0, binding = 2) readonly buffer PosBuf { int positions[]; };
layout(std430, set = 0, binding = 3) readonly buffer QBuf { ACT q[]; };
layout(std430, set = 0, binding = 4) readonly buffer KBuf { ACT k[]; };
layout(std430, set = 0, binding = 5) readonly buffer VBuf { ACT v[]; };
layout(std430, set = 0, binding = 6) writeonly buffer OBuf { ACT o[]; };
layout(std430, set = 0, binding = 7) writeonly buffer PartBuf { float part[]; };

#define NT ETLLM_VK_SDPA_THREADS
#define MAXD ETLLM_VK_SDPA_MAX_HEAD
shared float qs[MAXD];
shared float ps[NT];

void main() {
  const uint h = gl_WorkGroupID.x, s = gl_WorkGroupID.y, z = gl_WorkGroupID.z;
  const uint tid = gl_LocalInvocationID.x;
  if (s >= g.S)
    return;
  const bool split = pc.mode == 1u;
  const uint hk = h / (p.heads / p.kvHeads);
  int lo = 0, hi = int(p.t);
  if (p.causal != 0u) {
    int pos = p.hasPositions != 0u ? positions[s] : int(s);
    hi = pos < 0 ? 0 : min(pos + 1, int(p.t));
    if (p.window > 0u)
      lo = max(0, pos - int(p.window) + 1);
  }
  if (split) {
    lo = max(lo, int(z * p.chunk));
    hi = min(hi, int((z + 1u) * p.chunk));
  }
  const int qb = affine(p.qOff, p.qOffS) + int(h * p.qStrideH + s * p.qStrideS);
  for (uint i = tid; i < p.d; i += NT)
    qs[i] = float(q[qb + int(i)]);
  barrier();
  const uint kb = p.kOff + hk * p.kStrideH, vb = p.vOff + hk * p.vStrideH;
  float m = -1.0 / 0.0, l = 0.0;
  float acc[MAXD / NT];
  for (uint a = 0u; a < MAXD / NT; ++a)
    acc[a] = 0.0;
  for (int jb = lo; jb < hi; jb += int(NT)) {
    const int j = jb + int(tid);
    float sc = -1.0 / 0.0;
    if (j < hi) {
      float dotv = 0.0;
      const uint kr = kb + uint(j) * p.kStrideT;
      for (uint i = 0u; i < p.d; ++i)
        dotv += qs[i] * float(k[kr + i]);
      sc = p.scale * dotv;
      if (p.softcap > 0.0)
        sc = p.softcap * tanh(sc / p.softcap);
    }
    const float mb = groupMax(sc);
    const float mnew = max(m, mb);
    const float pj = j < hi ? exp(sc - mnew) : 0.0;
    ps[tid] = pj;
    const float bsum = groupSum(pj); // (its barriers publish ps too)
    const float corr = m == -1.0 / 0.0 ? 0.0 : exp(m - mnew);
    l = l * corr + bsum;
    const int nk = min(int(NT), hi - jb);
    for (uint a = 0u; a < MAXD / NT; ++a) {
      const uint d = tid + a * NT;
      if (d >= p.dv)
        break;
      float sum = acc[a] * corr;
      for (int t = 0; t < nk; ++t)
        sum += ps[t] * float(v[vb + uint(jb + t) * p.vStrideT + d]);
      acc[a] = sum;
    }
    m = mnew;
    barrier(); // ps is rewritten by the next block
  }
  if (split) {
    const uint base =
        p.partialOff + ((h * g.S + s) * p.splits + z) * (p.dv + 2u);
    if (tid == 0u) {
      part[base] = m;
      part[base + 1u] = l;
    }
    for (uint a = 0u; a < MAXD / NT; ++a) {
      const uint d = tid + a * NT;
      if (d < p.dv)
        part[base + 2u + d] = acc[a];
    }
    return;
  }
  const int ob = affine(p.oOff, p.oOffS) + int(h * p.oStrideH + s * p.oStrideS);
  for (uint a = 0u; a < MAXD / NT; ++a) {
    const uint d = tid + a * NT;
    if (d < p.dv)
      o[ob + int(d)] = ACT(l > 0.0 ? acc[a] / l : 0.0);
  }
}
