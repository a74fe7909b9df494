//===- contracts.cpp - What each Vulkan kernel needs and does -------------===//
//
// Every check below bounds what the kernel's shader (shaders/*.comp) can
// touch: the shader computes indices exactly as written in params.h, so a
// dispatch whose accesses all lie inside their bindings for S = 1 and S =
// the bound lies inside them for every S in between (each bound is affine
// in S). Magnitudes are kept below 2^31 so that the shaders' 32-bit index
// arithmetic cannot wrap.
//
//===----------------------------------------------------------------------===//
#include "contracts.h"

#include <algorithm>
#include <cstring>

namespace etllm::rt::vulkan {

namespace {

constexpr int64_t kLimit = int64_t(1) << 31;

/// A dimension of an access: count c0 + cS * S, stride in elements.
struct Dim {
  int64_t c0, cS, stride;
};

template <typename T> T paramsOf(const DispatchDesc &d) {
  T p;
  std::memcpy(&p, d.params.data(), sizeof(T));
  return p;
}

Error fieldError(const DispatchDesc &d, const std::string &msg) {
  return Error(std::string(kernelInfo(d.kernel).name) + ": " + msg);
}

uint32_t actBytes(uint32_t variant) {
  return (variant & Variant::kActF16) ? 2 : 4;
}

/// Checks that base + offS * S + sum (count_i - 1) * stride_i stays in
/// [0, elems) for S in [1, seqBound] (nothing is accessed when a count is
/// 0).
Status checkAccess(const DispatchDesc &d, const char *what, uint64_t elems,
                   int64_t off, int64_t offS, std::initializer_list<Dim> dims,
                   uint64_t seqBound) {
  if (off <= -kLimit || off >= kLimit || offS <= -kLimit || offS >= kLimit ||
      __int128(offS) * __int128(seqBound) >= kLimit ||
      __int128(offS) * __int128(seqBound) <= -kLimit)
    return fieldError(d, std::string(what) + ": an offset is out of range");
  for (uint64_t S : {uint64_t(1), seqBound}) {
    __int128 lo = __int128(off) + __int128(offS) * __int128(S);
    __int128 hi = lo;
    bool empty = false;
    for (const Dim &dim : dims) {
      if (dim.c0 < 0 || dim.cS < 0 || dim.stride < 0 || dim.stride >= kLimit)
        return fieldError(d, std::string(what) + ": a negative or huge size");
      __int128 count = __int128(dim.c0) + __int128(dim.cS) * __int128(S);
      if (count == 0) {
        empty = true;
        break;
      }
      __int128 span = (count - 1) * __int128(dim.stride);
      if (count >= kLimit || span >= kLimit)
        return fieldError(d, std::string(what) + ": a dimension is too large");
      hi += span;
    }
    if (empty)
      continue;
    if (lo < 0 || hi >= __int128(elems))
      return fieldError(d, std::string(what) + " reaches element " +
                               std::to_string(int64_t(lo < 0 ? lo : hi)) +
                               " at S = " + std::to_string(S) +
                               ", outside its binding of " +
                               std::to_string(elems) + " elements");
  }
  return Status();
}

uint64_t elemsOf(const DispatchDesc &d, uint32_t i) {
  uint32_t b = bindingElementBytes(d.kernel, d.variant, i);
  return b ? d.bindings[i].size / b : d.bindings[i].size;
}

/// A grid of `total` workgroups folded into x and y.
void fold(uint64_t total, Launch &l) {
  if (total == 0)
    total = 1;
  const uint64_t x = std::min<uint64_t>(total, 65535);
  l.groups[0] = uint32_t(x);
  l.groups[1] = uint32_t((total + x - 1) / x);
}

bool bad(uint32_t v, uint32_t limit) { return v == 0 || v > limit; }

/// The rows of a dispatch whose parameters give them as m0 + mS * S, at
/// length (or bucket) S.
template <typename P> uint64_t rowsAt(const P &p, uint32_t S) {
  return p.m0 + uint64_t(p.mS) * S;
}

/// The elements a copy moves at length (or bucket) S: dimension p.dyn
/// scales with S.
uint64_t copyElements(const CopyParams &p, uint32_t S) {
  uint64_t total = 1;
  const uint32_t n[4] = {p.n0, p.n1, p.n2, p.n3};
  for (int i = 0; i < 4; ++i)
    total *= uint64_t(n[i]) * (p.dyn == uint32_t(i) ? S : 1);
  return total;
}

Status checkMatmul(const DispatchDesc &d, const CheckContext &c) {
  auto p = paramsOf<MatmulParams>(d);
  if (bad(p.n, 1u << 24) || bad(p.k, 1u << 24))
    return fieldError(d, "n and k must be in [1, 2^24]");
  if (p.epilogue & ~(ETLLM_VK_EPILOGUE_RESIDUAL | ETLLM_VK_EPILOGUE_BIAS |
                     ETLLM_VK_EPILOGUE_SWIGLU))
    return fieldError(d, "unknown epilogue " + std::to_string(p.epilogue));
  const bool swiglu = p.epilogue & ETLLM_VK_EPILOGUE_SWIGLU;
  if (swiglu && p.epilogue != ETLLM_VK_EPILOGUE_SWIGLU)
    return fieldError(d, "the swiglu epilogue takes no bias or residual");
  const WeightFormat fmt = Variant::format(d.variant);
  const uint64_t wrows = swiglu ? 2 * uint64_t(p.n) : p.n;
  const uint64_t need = weightBytes(fmt, int64_t(wrows), p.k);
  if (need == 0)
    return fieldError(d, "a " + std::to_string(wrows) + " x " +
                             std::to_string(p.k) +
                             " weight has no layout in this format");
  if (d.bindings[1].size < need)
    return fieldError(
        d, "the weight binding holds " + std::to_string(d.bindings[1].size) +
               " bytes, the weight needs " + std::to_string(need));
  if (fmt == WeightFormat::Q4 && p.wScaleOff != q4ScaleWord(wrows, p.k))
    return fieldError(d, "the q4 scales must start at word " +
                             std::to_string(q4ScaleWord(wrows, p.k)));
  const Dim rows{p.m0, p.mS, p.xStride};
  ETLLM_RETURN_IF_ERROR(checkAccess(d, "x", elemsOf(d, 0), p.xOff, p.xOffS,
                                    {rows, {p.k, 0, 1}}, c.seqBound));
  ETLLM_RETURN_IF_ERROR(checkAccess(d, "y", elemsOf(d, 2), p.yOff, p.yOffS,
                                    {{p.m0, p.mS, p.yStride}, {p.n, 0, 1}},
                                    c.seqBound));
  if (p.epilogue & ETLLM_VK_EPILOGUE_RESIDUAL)
    ETLLM_RETURN_IF_ERROR(
        checkAccess(d, "residual", elemsOf(d, 3), p.rOff, p.rOffS,
                    {{p.m0, p.mS, p.rStride}, {p.n, 0, 1}}, c.seqBound));
  if ((p.epilogue & ETLLM_VK_EPILOGUE_BIAS) &&
      uint64_t(p.bOff) + p.n > elemsOf(d, 4))
    return fieldError(d, "the bias binding is too small");
  const uint64_t maxM = uint64_t(p.m0) + uint64_t(p.mS) * c.seqBound;
  if (maxM >= (1u << 24) || (maxM + 31) / 32 > c.maxGroups ||
      (uint64_t(p.n) + 31) / 32 > c.maxGroups)
    return fieldError(d, "too many rows or columns for the device's grid");
  return Status();
}

Status checkRmsNorm(const DispatchDesc &d, const CheckContext &c) {
  auto p = paramsOf<RmsNormParams>(d);
  if (bad(p.d, 1u << 24) || p.hasWeight > 1)
    return fieldError(d, "bad d or hasWeight");
  ETLLM_RETURN_IF_ERROR(checkAccess(d, "x", elemsOf(d, 0), p.xOff, p.xOffS,
                                    {{p.m0, p.mS, p.xStride}, {p.d, 0, 1}},
                                    c.seqBound));
  ETLLM_RETURN_IF_ERROR(checkAccess(d, "y", elemsOf(d, 2), p.yOff, p.yOffS,
                                    {{p.m0, p.mS, p.yStride}, {p.d, 0, 1}},
                                    c.seqBound));
  if (p.hasWeight && elemsOf(d, 1) < p.d)
    return fieldError(d, "the weight binding holds fewer than d values");
  return Status();
}

Status checkRope(const DispatchDesc &d, const CheckContext &c) {
  auto p = paramsOf<RopeParams>(d);
  const uint32_t jobs = Variant::jobs(d.variant);
  if (p.jobs != jobs)
    return fieldError(d, "jobs does not match the variant");
  if (p.convention > 2 || bad(p.tableRows, 1u << 24) || p.r > (1u << 16))
    return fieldError(d, "bad convention, r or tableRows");
  if (elemsOf(d, 0) < c.seqBound)
    return fieldError(d, "the positions binding holds fewer than " +
                             std::to_string(c.seqBound) + " values");
  if (elemsOf(d, 1) < uint64_t(p.tableRows) * p.r * 2)
    return fieldError(d, "the table binding is too small");
  const RopeJob all[3] = {p.job0, p.job1, p.job2};
  for (uint32_t j = 0; j < jobs; ++j) {
    const RopeJob &jb = all[j];
    if (bad(jb.heads, 1u << 16) || bad(jb.d, 1u << 16) || jb.rotate > 1 ||
        jb.toCache > 1 || (jb.rotate && 2 * p.r > jb.d) ||
        (jb.toCache && bad(jb.dstRows, 1u << 24)))
      return fieldError(d, "job " + std::to_string(j) +
                               ": bad heads, d, rotate, toCache or dstRows");
    ETLLM_RETURN_IF_ERROR(checkAccess(
        d, "a source", elemsOf(d, 2 + 2 * j), jb.srcOff, jb.srcOffS,
        {{jb.heads, 0, jb.srcStrideH}, {0, 1, jb.srcStrideS}, {jb.d, 0, 1}},
        c.seqBound));
    const Dim rows = jb.toCache ? Dim{jb.dstRows, 0, jb.dstStrideS}
                                : Dim{0, 1, jb.dstStrideS};
    ETLLM_RETURN_IF_ERROR(checkAccess(
        d, "a destination", elemsOf(d, 3 + 2 * j), int64_t(jb.dstOff), 0,
        {{jb.heads, 0, jb.dstStrideH}, rows, {jb.d, 0, 1}}, c.seqBound));
  }
  return Status();
}

Status checkSdpa(const DispatchDesc &d, const CheckContext &c) {
  auto p = paramsOf<SdpaParams>(d);
  if (bad(p.heads, 1u << 16) || bad(p.kvHeads, 1u << 16) ||
      p.heads % p.kvHeads != 0)
    return fieldError(d, "heads must be a multiple of kvHeads");
  if (bad(p.d, ETLLM_VK_SDPA_MAX_HEAD) || bad(p.dv, ETLLM_VK_SDPA_MAX_HEAD))
    return fieldError(d, "head sizes must be in [1, " +
                             std::to_string(ETLLM_VK_SDPA_MAX_HEAD) + "]");
  if (bad(p.t, 1u << 24) || p.causal > 1 || p.hasPositions > 1 ||
      bad(p.splits, 1u << 16) || bad(p.chunk, 1u << 24) ||
      uint64_t(p.splits) * p.chunk < p.t || p.maxSplitRows < p.heads)
    return fieldError(d, "bad t, causal, hasPositions, splits or chunk");
  if (p.hasPositions && elemsOf(d, 0) < c.seqBound)
    return fieldError(d, "the positions binding is too small");
  ETLLM_RETURN_IF_ERROR(checkAccess(
      d, "q", elemsOf(d, 1), p.qOff, p.qOffS,
      {{p.heads, 0, p.qStrideH}, {0, 1, p.qStrideS}, {p.d, 0, 1}}, c.seqBound));
  ETLLM_RETURN_IF_ERROR(checkAccess(
      d, "k", elemsOf(d, 2), p.kOff, 0,
      {{p.kvHeads, 0, p.kStrideH}, {p.t, 0, p.kStrideT}, {p.d, 0, 1}},
      c.seqBound));
  ETLLM_RETURN_IF_ERROR(checkAccess(
      d, "v", elemsOf(d, 3), p.vOff, 0,
      {{p.kvHeads, 0, p.vStrideH}, {p.t, 0, p.vStrideT}, {p.dv, 0, 1}},
      c.seqBound));
  ETLLM_RETURN_IF_ERROR(
      checkAccess(d, "o", elemsOf(d, 4), p.oOff, p.oOffS,
                  {{p.heads, 0, p.oStrideH}, {0, 1, p.oStrideS}, {p.dv, 0, 1}},
                  c.seqBound));
  // Split-KV (one query: S = 1) partials.
  const uint64_t partial = uint64_t(p.partialOff) + uint64_t(p.maxSplitRows) *
                                                        p.splits *
                                                        (uint64_t(p.dv) + 2);
  if (partial > elemsOf(d, 5) || partial >= uint64_t(kLimit))
    return fieldError(d, "the partials binding is too small");
  if (c.seqBound > c.maxGroups || p.splits > c.maxGroups ||
      p.heads > c.maxGroups)
    return fieldError(d, "too many queries, heads or splits for the grid");
  return Status();
}

Status checkCombine(const DispatchDesc &d, const CheckContext &c) {
  auto p = paramsOf<SdpaCombineParams>(d);
  if (bad(p.heads, 1u << 16) || bad(p.dv, 1u << 16) || bad(p.splits, 1u << 16))
    return fieldError(d, "bad heads, dv or splits");
  const uint64_t partial =
      uint64_t(p.partialOff) + uint64_t(p.heads) * p.splits * (p.dv + 2ull);
  if (partial > elemsOf(d, 0) || partial >= uint64_t(kLimit))
    return fieldError(d, "the partials binding is too small");
  // Runs only for one query (the decode bucket): S = 1.
  return checkAccess(
      d, "o", elemsOf(d, 1), p.oOff, p.oOffS,
      {{p.heads, 0, p.oStrideH}, {0, 1, p.oStrideS}, {p.dv, 0, 1}}, 1);
}

Status checkSoftmax(const DispatchDesc &d, const CheckContext &c) {
  auto p = paramsOf<SoftmaxParams>(d);
  if (bad(p.d, 1u << 24))
    return fieldError(d, "bad d");
  ETLLM_RETURN_IF_ERROR(checkAccess(d, "x", elemsOf(d, 0), p.xOff, p.xOffS,
                                    {{p.m0, p.mS, p.xStride}, {p.d, 0, 1}},
                                    c.seqBound));
  return checkAccess(d, "y", elemsOf(d, 1), p.yOff, p.yOffS,
                     {{p.m0, p.mS, p.yStride}, {p.d, 0, 1}}, c.seqBound);
}

Status checkElementwise(const DispatchDesc &d, const CheckContext &c) {
  auto p = paramsOf<ElementwiseParams>(d);
  if (p.op > ETLLM_VK_ELEMENTWISE_SUB || p.bScalar > 1)
    return fieldError(d, "bad op or bScalar");
  const Dim n{p.n0, p.nS, 1};
  ETLLM_RETURN_IF_ERROR(
      checkAccess(d, "a", elemsOf(d, 0), p.aOff, p.aOffS, {n}, c.seqBound));
  if (p.op != ETLLM_VK_ELEMENTWISE_SILU && !p.bScalar)
    ETLLM_RETURN_IF_ERROR(
        checkAccess(d, "b", elemsOf(d, 1), p.bOff, p.bOffS, {n}, c.seqBound));
  return checkAccess(d, "y", elemsOf(d, 2), p.yOff, p.yOffS, {n}, c.seqBound);
}

Status checkEmbedding(const DispatchDesc &d, const CheckContext &c) {
  auto p = paramsOf<EmbeddingParams>(d);
  if (bad(p.d, 1u << 24) || bad(p.rows, 1u << 30) ||
      uint64_t(p.rowBegin) + p.rows >= uint64_t(kLimit))
    return fieldError(d, "bad d, rows or rowBegin");
  const WeightFormat fmt = Variant::format(d.variant);
  const uint64_t need = weightBytes(fmt, p.rows, p.d);
  if (need == 0 || d.bindings[1].size < need)
    return fieldError(d, "the table binding holds " +
                             std::to_string(d.bindings[1].size) +
                             " bytes, the table needs " + std::to_string(need));
  if (fmt == WeightFormat::Q4 && p.wScaleOff != q4ScaleWord(p.rows, p.d))
    return fieldError(d, "the q4 scales must start at word " +
                             std::to_string(q4ScaleWord(p.rows, p.d)));
  ETLLM_RETURN_IF_ERROR(checkAccess(d, "indices", elemsOf(d, 0), p.iOff,
                                    p.iOffS, {{p.m0, p.mS, 1}}, c.seqBound));
  return checkAccess(d, "y", elemsOf(d, 2), p.yOff, p.yOffS,
                     {{p.m0, p.mS, p.yStride}, {p.d, 0, 1}}, c.seqBound);
}

Status checkCopy(const DispatchDesc &d, const CheckContext &c) {
  auto p = paramsOf<CopyParams>(d);
  if (p.dyn > 4)
    return fieldError(d, "bad dyn");
  const uint32_t n[4] = {p.n0, p.n1, p.n2, p.n3};
  __int128 total = 1;
  Dim src[4], dst[4];
  const uint32_t ss[4] = {p.ss0, p.ss1, p.ss2, p.ss3};
  const uint32_t ds[4] = {p.ds0, p.ds1, p.ds2, p.ds3};
  for (int i = 0; i < 4; ++i) {
    const bool dyn = p.dyn == uint32_t(i);
    total *= __int128(n[i]) * (dyn ? c.seqBound : 1);
    src[i] = {dyn ? 0 : n[i], dyn ? n[i] : 0, ss[i]};
    dst[i] = {dyn ? 0 : n[i], dyn ? n[i] : 0, ds[i]};
  }
  if (total >= kLimit)
    return fieldError(d, "too many elements");
  ETLLM_RETURN_IF_ERROR(checkAccess(d, "src", elemsOf(d, 0), p.srcOff,
                                    p.srcOffS, {src[0], src[1], src[2], src[3]},
                                    c.seqBound));
  return checkAccess(d, "dst", elemsOf(d, 1), p.dstOff, p.dstOffS,
                     {dst[0], dst[1], dst[2], dst[3]}, c.seqBound);
}

} // namespace

uint32_t bindingElementBytes(KernelId k, uint32_t variant, uint32_t i) {
  const uint32_t act = actBytes(variant);
  switch (k) {
  case KernelId::Copy:
    return i == 0 ? ((variant & Variant::kSrcF16) ? 2 : 4)
                  : ((variant & Variant::kDstF16) ? 2 : 4);
  case KernelId::Embedding:
    return i == 0 ? 4 : i == 1 ? 0 : act;
  case KernelId::RmsNorm:
    return i == 1 ? 4 : act;
  case KernelId::Matmul:
    if (i == 1)
      return 0;
    if (i == 2)
      return (variant & Variant::kOutF32) ? 4 : act;
    return i == 4 ? 4 : act;
  case KernelId::Rope:
    return i < 2 ? 4 : act;
  case KernelId::Sdpa:
    return i == 0 || i == 5 ? 4 : act;
  case KernelId::SdpaCombine:
    return i == 0 ? 4 : act;
  case KernelId::Softmax:
  case KernelId::Elementwise:
    return act;
  }
  return 4;
}

Status checkDispatch(const DispatchDesc &d, const CheckContext &c) {
  if (d.params.size() * 4 != kernelInfo(d.kernel).paramBytes)
    return fieldError(d, "the parameter block has " +
                             std::to_string(d.params.size() * 4) +
                             " bytes, the kernel's has " +
                             std::to_string(kernelInfo(d.kernel).paramBytes));
  switch (d.kernel) {
  case KernelId::Copy:
    return checkCopy(d, c);
  case KernelId::Embedding:
    return checkEmbedding(d, c);
  case KernelId::RmsNorm:
    return checkRmsNorm(d, c);
  case KernelId::Matmul:
    return checkMatmul(d, c);
  case KernelId::Rope:
    return checkRope(d, c);
  case KernelId::Sdpa:
    return checkSdpa(d, c);
  case KernelId::SdpaCombine:
    return checkCombine(d, c);
  case KernelId::Softmax:
    return checkSoftmax(d, c);
  case KernelId::Elementwise:
    return checkElementwise(d, c);
  }
  return fieldError(d, "unknown kernel");
}

Launch launchFor(const DispatchDesc &d, uint32_t bucket) {
  Launch l;
  switch (d.kernel) {
  case KernelId::Copy: {
    const uint64_t total = copyElements(paramsOf<CopyParams>(d), bucket);
    fold((total + ETLLM_VK_FLAT_THREADS - 1) / ETLLM_VK_FLAT_THREADS, l);
    break;
  }
  case KernelId::Elementwise: {
    auto p = paramsOf<ElementwiseParams>(d);
    uint64_t total = p.n0 + uint64_t(p.nS) * bucket;
    fold((total + ETLLM_VK_FLAT_THREADS - 1) / ETLLM_VK_FLAT_THREADS, l);
    break;
  }
  case KernelId::Embedding: // one workgroup per row
    fold(rowsAt(paramsOf<EmbeddingParams>(d), bucket), l);
    break;
  case KernelId::RmsNorm:
    fold(rowsAt(paramsOf<RmsNormParams>(d), bucket), l);
    break;
  case KernelId::Softmax:
    fold(rowsAt(paramsOf<SoftmaxParams>(d), bucket), l);
    break;
  case KernelId::Matmul: {
    auto p = paramsOf<MatmulParams>(d);
    const uint64_t M = rowsAt(p, bucket);
    if (M <= ETLLM_VK_GEMV_MAX_M) {
      l.mode = 0;
      fold((p.n + ETLLM_VK_GEMV_ROWS - 1) / ETLLM_VK_GEMV_ROWS, l);
    } else {
      l.mode = 1;
      l.groups[0] = (p.n + ETLLM_VK_GEMM_TILE - 1) / ETLLM_VK_GEMM_TILE;
      l.groups[1] = uint32_t((M + ETLLM_VK_GEMM_TILE - 1) / ETLLM_VK_GEMM_TILE);
    }
    break;
  }
  case KernelId::Rope: {
    auto p = paramsOf<RopeParams>(d);
    const RopeJob all[3] = {p.job0, p.job1, p.job2};
    uint32_t heads = 1;
    for (uint32_t j = 0; j < Variant::jobs(d.variant); ++j)
      heads = std::max(heads, all[j].heads);
    l.groups[0] = bucket;
    l.groups[1] = heads;
    l.groups[2] = Variant::jobs(d.variant);
    break;
  }
  case KernelId::Sdpa: {
    auto p = paramsOf<SdpaParams>(d);
    l.groups[0] = p.heads;
    if (bucket == 1) { // decoding: split-KV partials, then SDPA_COMBINE
      l.mode = 1;
      l.groups[2] = p.splits;
    } else {
      l.groups[1] = bucket;
    }
    break;
  }
  case KernelId::SdpaCombine: {
    auto p = paramsOf<SdpaCombineParams>(d);
    l.skip = bucket != 1;
    l.groups[0] = p.heads;
    break;
  }
  }
  return l;
}

uint64_t dispatchBytes(const DispatchDesc &d, uint32_t S, uint32_t kvLen,
                       uint32_t bucket) {
  const uint64_t act = actBytes(d.variant);
  switch (d.kernel) {
  case KernelId::Copy:
    return copyElements(paramsOf<CopyParams>(d), S) *
           (bindingElementBytes(d.kernel, d.variant, 0) +
            bindingElementBytes(d.kernel, d.variant, 1));
  case KernelId::Elementwise: {
    auto p = paramsOf<ElementwiseParams>(d);
    const uint64_t n = p.n0 + uint64_t(p.nS) * S;
    return n * act * (p.op == ETLLM_VK_ELEMENTWISE_SILU || p.bScalar ? 2 : 3);
  }
  case KernelId::Embedding: {
    auto p = paramsOf<EmbeddingParams>(d);
    const uint64_t row = weightBytes(Variant::format(d.variant), 1, p.d);
    return rowsAt(p, S) * (4 + row + p.d * act);
  }
  case KernelId::RmsNorm: {
    auto p = paramsOf<RmsNormParams>(d);
    return rowsAt(p, S) * p.d * act * 2 + (p.hasWeight ? p.d * 4ull : 0);
  }
  case KernelId::Softmax: {
    auto p = paramsOf<SoftmaxParams>(d);
    return rowsAt(p, S) * p.d * act * 2;
  }
  case KernelId::Matmul: {
    auto p = paramsOf<MatmulParams>(d);
    const uint64_t M = rowsAt(p, S);
    const bool swiglu = p.epilogue & ETLLM_VK_EPILOGUE_SWIGLU;
    const uint64_t w = weightBytes(Variant::format(d.variant),
                                   int64_t(swiglu ? 2ull * p.n : p.n), p.k);
    const uint64_t out = bindingElementBytes(d.kernel, d.variant, 2);
    uint64_t b = w + M * p.k * act + M * p.n * out;
    if (p.epilogue & ETLLM_VK_EPILOGUE_RESIDUAL)
      b += M * p.n * act;
    if (p.epilogue & ETLLM_VK_EPILOGUE_BIAS)
      b += p.n * 4ull;
    return b;
  }
  case KernelId::Rope: {
    auto p = paramsOf<RopeParams>(d);
    const RopeJob all[3] = {p.job0, p.job1, p.job2};
    uint64_t b = uint64_t(S) * 4;
    for (uint32_t j = 0; j < Variant::jobs(d.variant); ++j)
      b += uint64_t(all[j].heads) * S * all[j].d * act * 2 +
           (all[j].rotate ? uint64_t(S) * p.r * 8 : 0);
    return b;
  }
  case KernelId::Sdpa: {
    auto p = paramsOf<SdpaParams>(d);
    // Each (head, query) reads the keys and values it sees: at most kvLen
    // of them (causal), all t otherwise.
    const uint64_t keys = p.causal ? std::min<uint64_t>(kvLen, p.t) : p.t;
    uint64_t b =
        uint64_t(p.heads) * S * (p.d * act + keys * (p.d + p.dv) * act);
    b += bucket == 1 ? uint64_t(p.heads) * p.splits * (p.dv + 2) * 4
                     : uint64_t(p.heads) * S * p.dv * act;
    return b;
  }
  case KernelId::SdpaCombine: {
    auto p = paramsOf<SdpaCombineParams>(d);
    if (bucket != 1)
      return 0;
    return uint64_t(p.heads) * (p.splits * (p.dv + 2ull) * 4 + p.dv * act);
  }
  }
  return 0;
}

} // namespace etllm::rt::vulkan
