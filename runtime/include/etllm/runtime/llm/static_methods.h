//===- static_methods.h - A static program's prefill and decode -*- C++ -*-===//
//
// The Runner's (and etllm-bench's) step over a static-shape program
// (etllm-static-methods): `prefill` over a fixed chunk of C tokens and
// `decode` over one, instead of `forward`. A step feeds its tokens in
// chunks (the last one padded with its last token, whose logits are the
// real last token's row), the tail that a chunk would carry past the cache
// one token at a time. With the caches as method inputs and outputs
// (static_kv_cache: io) this class owns them: it passes the whole cache in
// and writes the real tokens' new entries from the outputs.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_STATIC_METHODS_H
#define ETLLM_RUNTIME_LLM_STATIC_METHODS_H

#include "etllm/runtime/program.h"
#include "etllm/runtime/result.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace etllm::rt::llm {

class StaticMethods {
public:
  /// Whether `program` is a static program (it has `prefill`): what open()
  /// takes, without a Module.
  static bool inProgram(const Program &program);

  /// The `prefill` and `decode` methods of `module`, checked against the
  /// form etllm-static-methods gives them; null when the program has no
  /// `prefill` (a dynamic program). `maxSeqLen` is the program's context
  /// (its metadata's max_seq_len).
  static Result<std::unique_ptr<StaticMethods>>
  open(Module &module, const std::string &path, int64_t maxSeqLen);

  /// Feeds `tokens` at positions startPos, startPos + 1, ... (all below the
  /// context); the logits of the last one, valid until the next call.
  Result<const float *> forward(const std::vector<int64_t> &tokens,
                                int64_t startPos);
  /// Zeroes the caches this object owns (the program's buffers are the
  /// Module's).
  void reset();

  int64_t vocab() const { return vocab_; }
  int64_t chunk() const { return chunk_; }
  /// The context: the program's, or its shortest cache input.
  int64_t maxSeqLen() const { return maxSeqLen_; }
  /// Planned bytes of both methods and the caches owned here.
  uint64_t plannedBytes() const;
  /// Bytes per position of the caches owned here (a step attends to them).
  uint64_t cacheBytesPerPosition() const;

private:
  struct Cache {
    DType dtype;
    int64_t sizes[4]; // [1, heads, length, head_dim]
    size_t elementBytes;
    std::vector<uint8_t> data;
  };
  /// One call of `m` over `real` tokens at `pos`, padded to its width.
  Result<const float *> step(Method &m, int64_t width, const int64_t *tokens,
                             int64_t real, int64_t pos);

  Method *prefill_ = nullptr, *decode_ = nullptr;
  int64_t chunk_ = 0, vocab_ = 0, maxSeqLen_ = 0;
  std::vector<Cache> caches_;
  std::vector<int64_t> tokens_, positions_;
};

} // namespace etllm::rt::llm

#endif // ETLLM_RUNTIME_LLM_STATIC_METHODS_H
