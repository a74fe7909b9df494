// Workgroup-wide sum and max over ETLLM_VK_ROW_THREADS threads (shared
// memory; no subgroup size is assumed). Every thread gets the result.
#ifndef RT
#define RT ETLLM_VK_ROW_THREADS
#endif
shared float reduceBuf[RT];

float groupSum(float v) {
  const uint tid = gl_LocalInvocationID.x;
  reduceBuf[tid] = v;
  barrier();
  for (uint stride = RT / 2u; stride > 0u; stride >>= 1u) {
    if (tid < stride)
      reduceBuf[tid] += reduceBuf[tid + stride];
    barrier();
  }
  float r = reduceBuf[0];
  barrier();
  return r;
}

float groupMax(float v) {
  const uint tid = gl_LocalInvocationID.x;
  reduceBuf[tid] = v;
  barrier();
  for (uint stride = RT / 2u; stride > 0u; stride >>= 1u) {
    if (tid < stride)
      reduceBuf[tid] = max(reduceBuf[tid], reduceBuf[tid + stride]);
    barrier();
  }
  float r = reduceBuf[0];
  barrier();
  return r;
}
