//===- static_methods.cpp - A static program's prefill and decode ---------===//
#include "etllm/runtime/llm/static_methods.h"

#include "etllm/runtime/llm/method_names.h"

#include <algorithm>
#include <cstring>

namespace etllm::rt::llm {

namespace {

/// Whether `t` is `dtype` with exactly `sizes`.
bool hasShape(const Tensor &t, DType dtype, std::initializer_list<int64_t> s) {
  if (t.dtype != dtype || t.rank != int(s.size()))
    return false;
  int i = 0;
  for (int64_t d : s)
    if (t.sizes[i++] != d)
      return false;
  return true;
}

std::string shapeText(const Tensor &t) {
  std::string s = std::string(dtypeName(t.dtype)) + " [";
  for (int i = 0; i < t.rank; ++i)
    s += (i ? ", " : "") + std::to_string(t.sizes[i]);
  return s + "]";
}

} // namespace

bool StaticMethods::inProgram(const Program &program) {
  std::vector<std::string> names = program.methodNames();
  return std::find(names.begin(), names.end(), kPrefillMethod) != names.end();
}

Result<std::unique_ptr<StaticMethods>>
StaticMethods::open(Module &module, const std::string &path,
                    int64_t maxSeqLen) {
  if (!inProgram(module.program()))
    return std::unique_ptr<StaticMethods>();
  std::unique_ptr<StaticMethods> s(new StaticMethods());
  auto prefill = module.method(kPrefillMethod);
  if (!prefill.ok())
    return prefill.error();
  auto decode = module.method(kDecodeMethod);
  if (!decode.ok())
    return Error(path + ": a static program has `prefill` and `decode`: " +
                 decode.message());
  s->prefill_ = *prefill;
  s->decode_ = *decode;
  Method &p = **prefill, &d = **decode;
  auto refuse = [&](const std::string &what) -> Error {
    return Error(path +
                 ": not a static program's `prefill` and `decode` "
                 "(etllm-static-methods): " +
                 what);
  };
  if (p.numInputs() < 2 || p.numInputs() != d.numInputs() ||
      p.numOutputs() != p.numInputs() - 1 ||
      d.numOutputs() != d.numInputs() - 1)
    return refuse("they take (tokens, positions, caches...) and return "
                  "(logits, new entries...)");
  const Tensor &tok = p.input(0);
  s->chunk_ = tok.rank == 2 ? tok.sizes[1] : 0;
  if (s->chunk_ < 1 || !hasShape(tok, DType::I64, {1, s->chunk_}) ||
      !hasShape(p.input(1), DType::I64, {s->chunk_}) ||
      !hasShape(d.input(0), DType::I64, {1, 1}) ||
      !hasShape(d.input(1), DType::I64, {1}))
    return refuse("`prefill` takes tokens i64 [1, C] and positions i64 [C], "
                  "`decode` [1, 1] and [1]; they take " +
                  shapeText(tok) + ", " + shapeText(p.input(1)) + ", " +
                  shapeText(d.input(0)) + ", " + shapeText(d.input(1)));
  const Tensor &logits = p.output(0);
  s->vocab_ = logits.rank == 3 ? logits.sizes[2] : 0;
  if (s->vocab_ < 1 ||
      !hasShape(logits, DType::F32, {1, s->chunk_, s->vocab_}) ||
      !hasShape(d.output(0), DType::F32, {1, 1, s->vocab_}))
    return refuse("the logits are f32 [1, C, vocab] and [1, 1, vocab], not " +
                  shapeText(logits) + " and " + shapeText(d.output(0)));
  if (maxSeqLen < 1)
    return refuse("the program records no max_seq_len");
  s->maxSeqLen_ = maxSeqLen;
  for (size_t i = 2; i < p.numInputs(); ++i) {
    const Tensor &c = p.input(i);
    const size_t esize = elementSize(c.dtype);
    if (c.rank != 4 || c.sizes[0] != 1 || esize == 0 ||
        !hasShape(d.input(i), c.dtype,
                  {1, c.sizes[1], c.sizes[2], c.sizes[3]}) ||
        !hasShape(p.output(i - 1), c.dtype,
                  {1, c.sizes[1], s->chunk_, c.sizes[3]}) ||
        !hasShape(d.output(i - 1), c.dtype, {1, c.sizes[1], 1, c.sizes[3]}))
      return refuse("cache " + std::to_string(i - 2) + " is " + shapeText(c) +
                    " in, " + shapeText(p.output(i - 1)) +
                    " out of `prefill`: a float [1, heads, length, head_dim] "
                    "cache and its chunk's [1, heads, C, head_dim] entries");
    // The context is the shortest cache.
    s->maxSeqLen_ = std::min(s->maxSeqLen_, c.sizes[2]);
    Cache cache{c.dtype, {1, c.sizes[1], c.sizes[2], c.sizes[3]}, esize, {}};
    cache.data.assign(size_t(c.sizes[1] * c.sizes[2] * c.sizes[3]) * esize, 0);
    s->caches_.push_back(std::move(cache));
  }
  if (s->chunk_ > s->maxSeqLen_)
    return refuse("the chunk of " + std::to_string(s->chunk_) +
                  " tokens is longer than the context of " +
                  std::to_string(s->maxSeqLen_));
  return s;
}

void StaticMethods::reset() {
  for (Cache &c : caches_)
    std::fill(c.data.begin(), c.data.end(), uint8_t(0));
}

uint64_t StaticMethods::plannedBytes() const {
  uint64_t n = prefill_->plannedBytes() + decode_->plannedBytes();
  for (const Cache &c : caches_)
    n += c.data.size();
  return n;
}

uint64_t StaticMethods::cacheBytesPerPosition() const {
  uint64_t n = 0;
  for (const Cache &c : caches_)
    n += uint64_t(c.sizes[1] * c.sizes[3]) * c.elementBytes;
  return n;
}

Result<const float *> StaticMethods::step(Method &m, int64_t width,
                                          const int64_t *tokens, int64_t real,
                                          int64_t pos) {
  // Padding repeats the last real token at the next positions: its entries
  // lie past the prompt (dropped here, or overwritten in an in-place cache
  // before any step attends to them) and no real token attends to it.
  tokens_.assign(tokens, tokens + real);
  tokens_.resize(size_t(width), tokens[real - 1]);
  positions_.resize(size_t(width));
  for (int64_t i = 0; i < width; ++i)
    positions_[size_t(i)] = pos + i;
  int64_t tokSizes[2] = {1, width};
  ETLLM_RETURN_IF_ERROR(m.setInput(0, DType::I64, tokSizes, 2, tokens_.data()));
  ETLLM_RETURN_IF_ERROR(
      m.setInput(1, DType::I64, &width, 1, positions_.data()));
  for (size_t c = 0; c < caches_.size(); ++c)
    ETLLM_RETURN_IF_ERROR(m.setInput(2 + c, caches_[c].dtype, caches_[c].sizes,
                                     4, caches_[c].data.data()));
  ETLLM_RETURN_IF_ERROR(m.execute());
  // The outputs keep the shapes open() checked (a kernel that resized one
  // would be a program the copies below must not trust).
  if (!hasShape(m.output(0), DType::F32, {1, width, vocab_}))
    return Error("`" + m.name() + "` returned logits " +
                 shapeText(m.output(0)) + ", not f32 [1, " +
                 std::to_string(width) + ", " + std::to_string(vocab_) + "]");
  // The real tokens' new entries: [1, heads, width, D] into [1, heads, T, D]
  // at their positions.
  for (size_t c = 0; c < caches_.size(); ++c) {
    Cache &cache = caches_[c];
    const Tensor &out = m.output(1 + c);
    if (!hasShape(out, cache.dtype, {1, cache.sizes[1], width, cache.sizes[3]}))
      return Error("`" + m.name() + "` returned the entries of cache " +
                   std::to_string(c) + " as " + shapeText(out));
    const int64_t heads = cache.sizes[1], length = cache.sizes[2];
    const size_t row = size_t(cache.sizes[3]) * cache.elementBytes;
    const uint8_t *src = out.ptr<uint8_t>();
    for (int64_t h = 0; h < heads; ++h)
      std::memcpy(cache.data.data() + (size_t(h * length + pos)) * row,
                  src + size_t(h * width) * row, size_t(real) * row);
  }
  return m.output(0).ptr<float>() + (real - 1) * vocab_;
}

Result<const float *> StaticMethods::forward(const std::vector<int64_t> &tokens,
                                             int64_t startPos) {
  const int64_t n = int64_t(tokens.size());
  if (n == 0 || startPos < 0 || startPos + n > maxSeqLen_)
    return Error("the static program's context of " +
                 std::to_string(maxSeqLen_) + " tokens cannot take " +
                 std::to_string(n) + " tokens at position " +
                 std::to_string(startPos));
  const float *last = nullptr;
  for (int64_t i = 0; i < n;) {
    const int64_t pos = startPos + i, rest = n - i;
    // A chunk while two or more tokens are left and the padded chunk fits
    // the cache; one token at a time otherwise.
    const bool chunk = rest > 1 && pos + chunk_ <= maxSeqLen_;
    const int64_t width = chunk ? chunk_ : 1;
    const int64_t real = std::min(width, rest);
    auto logits =
        step(chunk ? *prefill_ : *decode_, width, tokens.data() + i, real, pos);
    if (!logits.ok())
      return logits.error();
    last = *logits;
    i += real;
  }
  return last;
}

} // namespace etllm::rt::llm
