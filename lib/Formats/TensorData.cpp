//===- TensorData.cpp - Dequantization, conversion, row permutes ----------===//
//
// The block layouts and arithmetic follow ggml (ggml-common.h and
// ggml-quants.c): blocks are little-endian structs of fp16 scales and packed
// quants, running along the innermost dimension.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Gguf.h"
#include "etllm/runtime/ggml_blocks.h"
#include "etllm/runtime/half.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace etllm::formats {

namespace {

using rt::halfToFloat;

float loadHalf(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return halfToFloat(h);
}

/// F16 -> F32 of n values: 8 at a time with F16C where the CPU has it (a
/// quarter of an F16 export's CPU time went here, one value at a time).
/// Bit-identical to halfToFloat: blocks holding an infinity or a NaN (whose
/// payload F16C may quiet) take the scalar path.
void halfsToFloatsScalar(const uint8_t *p, uint64_t n, float *out) {
  for (uint64_t i = 0; i < n; ++i)
    out[i] = loadHalf(p + 2 * i);
}
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx,f16c"))) void
halfsToFloatsF16c(const uint8_t *p, uint64_t n, float *out) {
  const __m128i expMask = _mm_set1_epi16(0x7c00);
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 2 * i));
    __m128i special = _mm_cmpeq_epi16(_mm_and_si128(h, expMask), expMask);
    if (_mm_movemask_epi8(special))
      halfsToFloatsScalar(p + 2 * i, 8, out + i);
    else
      _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  halfsToFloatsScalar(p + 2 * i, n - i, out + i);
}
#endif
void halfsToFloats(const uint8_t *p, uint64_t n, float *out) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  static const bool f16c =
      __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  if (f16c)
    return halfsToFloatsF16c(p, n, out);
#endif
  halfsToFloatsScalar(p, n, out);
}

void storeHalf(uint8_t *p, float f) {
  uint16_t h = rt::floatToHalf(f);
  std::memcpy(p, &h, 2);
}

// The block formats and their dequantization are the runtime's
// (etllm/runtime/ggml_blocks.h): one definition for the GGUF reader and the
// kernels that run GGUF blocks kept as they are.
using rt::ggml::kQK;

using BlockFn = void (*)(const uint8_t *, float *);

BlockFn blockDequantizer(DType dtype) {
  switch (dtype) {
  case DType::Q8_0:
    return rt::ggml::dequantQ8_0;
  case DType::Q4_0:
    return rt::ggml::dequantQ4_0;
  case DType::Q4_1:
    return rt::ggml::dequantQ4_1;
  case DType::Q5_0:
    return rt::ggml::dequantQ5_0;
  case DType::Q5_1:
    return rt::ggml::dequantQ5_1;
  case DType::Q4_K:
    return rt::ggml::dequantQ4_K;
  case DType::Q5_K:
    return rt::ggml::dequantQ5_K;
  case DType::Q6_K:
    return rt::ggml::dequantQ6_K;
  default:
    return nullptr;
  }
}

template <typename T>
void convertPlain(const uint8_t *src, uint64_t n, float *dst) {
  for (uint64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + i * sizeof(T), sizeof(T));
    dst[i] = static_cast<float>(v);
  }
}

enum class RowOrder { ToRotateHalf, ToInterleaved };

Status permuteRows(DType dtype, const std::vector<int64_t> &shape,
                   int64_t numHeads, const uint8_t *src, uint8_t *dst,
                   RowOrder order) {
  if (shape.empty())
    return Error("cannot permute the rows of a scalar");
  if (numHeads <= 0)
    return Error("q/k row permutation needs a positive head count, got " +
                 std::to_string(numHeads));
  int64_t rows = shape[0];
  if (rows <= 0 || rows % numHeads != 0)
    return Error("q/k row permutation: " + std::to_string(rows) +
                 " rows of shape " + shapeToString(shape) +
                 " are not divisible into " + std::to_string(numHeads) +
                 " heads");
  int64_t perHead = rows / numHeads;
  if (perHead % 2 != 0)
    return Error("q/k row permutation: head size " + std::to_string(perHead) +
                 " of shape " + shapeToString(shape) + " is odd");
  std::vector<int64_t> rowShape(shape.begin() + 1, shape.end());
  uint64_t rowBytes;
  if (rowShape.empty()) {
    if (isBlockQuantized(dtype))
      return Error(std::string("q/k row permutation: a 1-D ") +
                   dtypeName(dtype) + " tensor has no whole-block rows");
    rowBytes = static_cast<uint64_t>(dtypeBlockBytes(dtype));
  } else {
    Result<uint64_t> rb = byteSize(dtype, rowShape);
    if (!rb)
      return Error("q/k row permutation: " + rb.message());
    rowBytes = *rb;
  }
  int64_t half = perHead / 2;
  for (int64_t h = 0; h < numHeads; ++h) {
    for (int64_t part = 0; part < 2; ++part) {
      for (int64_t i = 0; i < half; ++i) {
        int64_t rotateHalfRow = h * perHead + part * half + i;
        int64_t interleavedRow = h * perHead + 2 * i + part;
        int64_t to =
            order == RowOrder::ToRotateHalf ? rotateHalfRow : interleavedRow;
        int64_t from =
            order == RowOrder::ToRotateHalf ? interleavedRow : rotateHalfRow;
        std::memcpy(dst + static_cast<uint64_t>(to) * rowBytes,
                    src + static_cast<uint64_t>(from) * rowBytes, rowBytes);
      }
    }
  }
  return Status();
}

} // namespace

Status dequantizeRows(DType dtype, const uint8_t *src, int64_t numElements,
                      float *dst) {
  BlockFn fn = blockDequantizer(dtype);
  if (!fn)
    return Error(std::string("dequantizeRows: ") + dtypeName(dtype) +
                 " is not a ggml block type");
  int64_t bs = dtypeBlockSize(dtype);
  if (numElements < 0 || numElements % bs != 0)
    return Error("dequantizeRows: element count " +
                 std::to_string(numElements) + " is not a multiple of the " +
                 dtypeName(dtype) + " block size " + std::to_string(bs));
  int64_t bb = dtypeBlockBytes(dtype);
  int64_t blocks = numElements / bs;
  for (int64_t i = 0; i < blocks; ++i)
    fn(src + i * bb, dst + i * bs);
  return Status();
}

namespace {

/// kv_b_proj [heads * (nope + v), kv_lora] from attn_k_b [heads, kv_lora,
/// nope] and attn_v_b [heads, v, kv_lora] (TensorRef::parts).
Result<std::vector<float>> assembleKvB(const TensorRef &tensor) {
  auto fail = [&](const std::string &what) {
    return Error(tensor.file + ": tensor '" + tensor.name + "': " + what);
  };
  if (tensor.parts.size() != 2 || tensor.shape.size() != 2)
    return fail("an assembled kv_b_proj needs attn_k_b and attn_v_b");
  const TensorRef &kb = tensor.parts[0], &vb = tensor.parts[1];
  if (kb.shape.size() != 3 || vb.shape.size() != 3 ||
      kb.shape[0] != vb.shape[0] || kb.shape[1] != vb.shape[2] ||
      !kb.parts.empty() || !vb.parts.empty())
    return fail("parts " + shapeToString(kb.shape) + " and " +
                shapeToString(vb.shape) +
                " are not [heads, kv_lora, nope] and [heads, v, kv_lora]");
  const int64_t heads = kb.shape[0], kvl = kb.shape[1], nope = kb.shape[2],
                v = vb.shape[1];
  if (tensor.shape[0] != heads * (nope + v) || tensor.shape[1] != kvl)
    return fail("shape " + shapeToString(tensor.shape) + " does not match " +
                "its parts " + shapeToString(kb.shape) + " and " +
                shapeToString(vb.shape));
  Result<std::vector<float>> k = toFloat32(kb);
  if (!k)
    return k.error();
  Result<std::vector<float>> val = toFloat32(vb);
  if (!val)
    return val.error();
  std::vector<float> out(static_cast<size_t>(heads * (nope + v) * kvl));
  for (int64_t h = 0; h < heads; ++h) {
    float *head = out.data() + h * (nope + v) * kvl;
    // Key rows: the converter stored k_b transposed per head.
    for (int64_t c = 0; c < kvl; ++c)
      for (int64_t i = 0; i < nope; ++i)
        head[i * kvl + c] = (*k)[(h * kvl + c) * nope + i];
    std::memcpy(head + nope * kvl, val->data() + h * v * kvl,
                static_cast<size_t>(v * kvl) * sizeof(float));
  }
  return out;
}

} // namespace

namespace {

/// The element count of a tensor without parts whose bytes match its dtype
/// and shape (checked before anything is allocated for it).
Result<uint64_t> checkedElements(const TensorRef &tensor) {
  auto fail = [&](const std::string &what) {
    return Error(tensor.file + ": tensor '" + tensor.name + "': " + what);
  };
  Result<uint64_t> n = numElements(tensor.shape);
  if (!n)
    return fail(n.message());
  Result<uint64_t> bytes = byteSize(tensor.dtype, tensor.shape);
  if (!bytes)
    return fail(bytes.message());
  if (*bytes != tensor.nbytes || (!tensor.data && tensor.nbytes))
    return fail("holds " + std::to_string(tensor.nbytes) + " bytes, " +
                dtypeName(tensor.dtype) + " " + shapeToString(tensor.shape) +
                " needs " + std::to_string(*bytes));
  return *n;
}

} // namespace

Status toFloat32Range(const TensorRef &tensor, uint64_t first, uint64_t count,
                      float *dst) {
  auto fail = [&](const std::string &what) {
    return Error(tensor.file + ": tensor '" + tensor.name + "': " + what);
  };
  if (!tensor.parts.empty())
    return fail("an assembled tensor is converted whole (toFloat32)");
  Result<uint64_t> n = checkedElements(tensor);
  if (!n)
    return n.error();
  const uint64_t bs = uint64_t(dtypeBlockSize(tensor.dtype));
  if (first > *n || count > *n - first || first % bs != 0 || count % bs != 0)
    return fail("elements [" + std::to_string(first) + ", +" +
                std::to_string(count) + ") are not whole blocks of its " +
                std::to_string(*n));
  const uint8_t *p =
      tensor.data + first / bs * uint64_t(dtypeBlockBytes(tensor.dtype));
  const uint64_t c = count;
  switch (tensor.dtype) {
  case DType::F32:
    if (c)
      std::memcpy(dst, p, c * 4);
    break;
  case DType::F16:
    halfsToFloats(p, c, dst);
    break;
  case DType::BF16:
    for (uint64_t i = 0; i < c; ++i) {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      dst[i] = rt::bf16ToFloat(b);
    }
    break;
  case DType::F64:
    convertPlain<double>(p, c, dst);
    break;
  case DType::I8:
    convertPlain<int8_t>(p, c, dst);
    break;
  case DType::I16:
    convertPlain<int16_t>(p, c, dst);
    break;
  case DType::I32:
    convertPlain<int32_t>(p, c, dst);
    break;
  case DType::I64:
    convertPlain<int64_t>(p, c, dst);
    break;
  case DType::U8:
    convertPlain<uint8_t>(p, c, dst);
    break;
  case DType::BOOL:
    for (uint64_t i = 0; i < c; ++i)
      dst[i] = p[i] ? 1.0f : 0.0f;
    break;
  default:
    if (Status st =
            dequantizeRows(tensor.dtype, p, static_cast<int64_t>(c), dst);
        !st.ok())
      return fail(st.message());
  }
  return Status();
}

Result<std::vector<float>> toFloat32(const TensorRef &tensor) {
  if (!tensor.parts.empty())
    return assembleKvB(tensor);
  Result<uint64_t> n = checkedElements(tensor);
  if (!n)
    return n.error();
  std::vector<float> out(*n);
  if (Status st = toFloat32Range(tensor, 0, *n, out.data()); !st.ok())
    return Error(st.message());
  return out;
}

Status permuteQkRowsToRotateHalf(DType dtype, const std::vector<int64_t> &shape,
                                 int64_t numHeads, const uint8_t *src,
                                 uint8_t *dst) {
  return permuteRows(dtype, shape, numHeads, src, dst, RowOrder::ToRotateHalf);
}

Status permuteQkRowsToInterleaved(DType dtype,
                                  const std::vector<int64_t> &shape,
                                  int64_t numHeads, const uint8_t *src,
                                  uint8_t *dst) {
  return permuteRows(dtype, shape, numHeads, src, dst, RowOrder::ToInterleaved);
}

Result<std::vector<uint8_t>> bytesInHfOrder(const TensorRef &tensor) {
  if (!tensor.parts.empty()) {
    Result<std::vector<float>> f = toFloat32(tensor);
    if (!f)
      return f.error();
    std::vector<uint8_t> out(f->size() * sizeof(float));
    std::memcpy(out.data(), f->data(), out.size());
    return out;
  }
  std::vector<uint8_t> out(tensor.nbytes);
  if (tensor.qkPermuteHeads <= 0) {
    if (tensor.nbytes)
      std::memcpy(out.data(), tensor.data, tensor.nbytes);
    return out;
  }
  Result<uint64_t> bytes = byteSize(tensor.dtype, tensor.shape);
  if (!bytes || *bytes != tensor.nbytes)
    return Error(tensor.file + ": tensor '" + tensor.name +
                 "': byte size does not match its dtype and shape");
  Status s =
      permuteQkRowsToRotateHalf(tensor.dtype, tensor.shape,
                                tensor.qkPermuteHeads, tensor.data, out.data());
  if (!s.ok())
    return Error(tensor.file + ": tensor '" + tensor.name +
                 "': " + s.message());
  return out;
}

//===----------------------------------------------------------------------===//
// Quantizers (ggml reference implementations)
//===----------------------------------------------------------------------===//

void quantizeRowQ8_0(const float *x, uint8_t *y, int64_t n) {
  int64_t nb = n / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j)
      amax = std::max(amax, std::fabs(x[i * kQK + j]));
    float d = amax / ((1 << 7) - 1);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t *b = y + i * 34;
    storeHalf(b, d);
    int8_t *qs = reinterpret_cast<int8_t *>(b + 2);
    for (int j = 0; j < kQK; ++j)
      qs[j] = static_cast<int8_t>(std::roundf(x[i * kQK + j] * id));
  }
}

void quantizeRowQ4_0(const float *x, uint8_t *y, int64_t n) {
  int64_t nb = n / kQK;
  for (int64_t i = 0; i < nb; ++i) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      float v = x[i * kQK + j];
      if (amax < std::fabs(v)) {
        amax = std::fabs(v);
        max = v;
      }
    }
    float d = max / -8;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t *b = y + i * 18;
    storeHalf(b, d);
    uint8_t *qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
      float x0 = x[i * kQK + j] * id;
      float x1 = x[i * kQK + kQK / 2 + j] * id;
      uint8_t xi0 = static_cast<uint8_t>(
          std::min<int>(15, static_cast<int8_t>(x0 + 8.5f)));
      uint8_t xi1 = static_cast<uint8_t>(
          std::min<int>(15, static_cast<int8_t>(x1 + 8.5f)));
      qs[j] = static_cast<uint8_t>(xi0 | (xi1 << 4));
    }
  }
}

Status encodeFloats(DType dtype, const float *src, int64_t n, uint8_t *dst) {
  if (n < 0)
    return Error("encodeFloats: negative element count");
  switch (dtype) {
  case DType::F32:
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return Status();
  case DType::F16:
    for (int64_t i = 0; i < n; ++i)
      storeHalf(dst + 2 * i, src[i]);
    return Status();
  case DType::BF16:
    for (int64_t i = 0; i < n; ++i) {
      uint16_t b = rt::floatToBf16(src[i]);
      std::memcpy(dst + 2 * i, &b, 2);
    }
    return Status();
  case DType::Q8_0:
  case DType::Q4_0:
    if (n % kQK != 0)
      return Error("encodeFloats: " + std::to_string(n) +
                   " elements are not a multiple of the block size 32");
    if (dtype == DType::Q8_0)
      quantizeRowQ8_0(src, dst, n);
    else
      quantizeRowQ4_0(src, dst, n);
    return Status();
  case DType::Q5_0:
  case DType::Q5_1:
  case DType::Q4_K:
  case DType::Q5_K:
  case DType::Q6_K:
    if (n % dtypeBlockSize(dtype) != 0)
      return Error("encodeFloats: " + std::to_string(n) +
                   " elements are not a multiple of the block size " +
                   std::to_string(dtypeBlockSize(dtype)));
    detail::quantizeGgmlRows(dtype, src, n, dst);
    return Status();
  default:
    return Error(std::string("encodeFloats: cannot encode ") +
                 dtypeName(dtype));
  }
}

} // namespace etllm::formats
