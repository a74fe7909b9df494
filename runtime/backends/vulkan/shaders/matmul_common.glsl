// Bindings and the epilogue of both matmul kernels (GEMV and GEMM).
// WFMT: 0 f32, 1 f16, 2 q4 (format.h WeightFormat); OUT_F32: an f32
// output whatever the activations.
layout(std140, set = 0, binding = 1) uniform ParamsBlock { MatmulParams p; };
layout(std430, set = 0, binding = 2) readonly buffer XBuf { ACT x[]; };
#if WFMT == 0
layout(std430, set = 0, binding = 3) readonly buffer WBuf { float w[]; };
#else
layout(std430, set = 0, binding = 3) readonly buffer WBuf { uint w[]; };
#endif
#ifdef OUT_F32
#define OUT float
#else
#define OUT ACT
#endif
layout(std430, set = 0, binding = 4) writeonly buffer YBuf { OUT y[]; };
layout(std430, set = 0, binding = 5) readonly buffer RBuf { ACT r[]; };
layout(std430, set = 0, binding = 6) readonly buffer BBuf { float bias[]; };

uint rowsM() { return p.m0 + p.mS * g.S; }

#if WFMT == 2
// The q4 scale of weight row `row`, group `grp`.
float q4Scale(uint row, uint grp) {
  uint i = row * (p.k / 32u) + grp;
  vec2 pair = unpackHalf2x16(w[p.wScaleOff + i / 2u]);
  return (i & 1u) == 0u ? pair.x : pair.y;
}
#endif

// Writes output (m, j) from the sums of weight row j (and, swiglu, n + j).
void storeOutput(uint m, uint j, float v, float up) {
  if ((p.epilogue & ETLLM_VK_EPILOGUE_SWIGLU) != 0u)
    v = silu(v) * up;
  if ((p.epilogue & ETLLM_VK_EPILOGUE_BIAS) != 0u)
    v += bias[p.bOff + j];
  if ((p.epilogue & ETLLM_VK_EPILOGUE_RESIDUAL) != 0u)
    v += float(r[affine(p.rOff, p.rOffS) + int(m * p.rStride + j)]);
  y[affine(p.yOff, p.yOffS) + int(m * p.yStride + j)] = OUT(v);
}
