//===- common.cpp - Helpers shared by the portable kernels ----------------===//
#include "common.h"

#include <sstream>

namespace etllm::rt::portable {

std::string Shape::str() const {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < rank; ++i)
    os << (i ? ", " : "") << sizes[i];
  os << ']';
  return os.str();
}

std::string shapeStr(const Tensor &t) { return t.shapeString(); }

Status resizeTo(const char *op, Tensor &out, const Shape &s) {
  Status st = out.resize(s.sizes, s.rank);
  if (!st.ok())
    return opError(op, "output: " + st.message());
  return Status();
}

Status normalizeDim(const char *op, int64_t dim, int rank, int &result) {
  if (dim < -int64_t(rank) || dim >= int64_t(rank))
    return opError(op, "dimension " + std::to_string(dim) +
                           " is out of range for rank " + std::to_string(rank));
  result = int(dim < 0 ? dim + rank : dim);
  return Status();
}

void contiguousStrides(const int64_t *sizes, int rank, int64_t *strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= sizes[i];
  }
}

Status broadcastShapes(const char *op, const Tensor *const *ts, int n,
                       Shape &out) {
  int rank = 0;
  for (int k = 0; k < n; ++k)
    rank = ts[k]->rank > rank ? ts[k]->rank : rank;
  out.rank = rank;
  for (int d = 0; d < rank; ++d) {
    int64_t size = 1;
    for (int k = 0; k < n; ++k) {
      int off = rank - ts[k]->rank;
      if (d < off)
        continue;
      int64_t s = ts[k]->sizes[d - off];
      if (s == 1)
        continue;
      if (size != 1 && size != s) {
        std::string shapes;
        for (int j = 0; j < n; ++j)
          shapes += (j ? ", " : "") + ts[j]->shapeString();
        return opError(op, "shapes do not broadcast: " + shapes);
      }
      size = s;
    }
    out.sizes[d] = size;
  }
  return Status();
}

void broadcastStrides(const Tensor &t, const Shape &out, int64_t *strides) {
  int64_t own[kMaxRank];
  contiguousStrides(t.sizes, t.rank, own);
  int off = out.rank - t.rank;
  for (int d = 0; d < out.rank; ++d) {
    if (d < off || t.sizes[d - off] == 1)
      strides[d] = 0;
    else
      strides[d] = own[d - off];
  }
}

Status broadcastPair(const char *op, const Tensor &x, const Tensor &y,
                     Shape &out, int64_t (&strides)[2][kMaxRank]) {
  const Tensor *ts[2] = {&x, &y};
  ETLLM_RETURN_IF_ERROR(broadcastShapes(op, ts, 2, out));
  broadcastStrides(x, out, strides[0]);
  broadcastStrides(y, out, strides[1]);
  return Status();
}

Status getScratch(const char *op, const KernelArgs &args, size_t bytes,
                  void *&result) {
  if (!args.ctx)
    return opError(op, "needs an execution context (scratch memory)");
  result = args.ctx->scratch(bytes == 0 ? 1 : bytes);
  return Status();
}

Status checkIndices(const char *op, const Tensor &idx, int64_t limit,
                    bool allowNegative) {
  if (idx.dtype != DType::I64 && idx.dtype != DType::I32)
    return opError(op, std::string("indices must be i64 or i32, not ") +
                           dtypeName(idx.dtype));
  int64_t n = idx.numel();
  int64_t lo = allowNegative ? -limit : 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = loadIndex(idx, i);
    if (v < lo || v >= limit)
      return opError(op, "index " + std::to_string(v) +
                             " is out of range for a dimension of size " +
                             std::to_string(limit));
  }
  return Status();
}

Status checkPlain(const char *op, const Tensor &t) {
  if (t.dtype == DType::QWeight || t.dtype == DType::QAct)
    return unsupportedDType(op, t.dtype);
  return Status();
}

} // namespace etllm::rt::portable
