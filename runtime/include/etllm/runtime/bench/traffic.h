//===- traffic.h - Bytes a decode step reads, from the program --*- C++ -*-===//
//
// The decode roofline needs the bytes one decode step (one token) reads.
// They are derived from the program and the module, never assumed:
//   - every constant an instruction of the method reads, once: in full,
//     except the tables of embedding/qembedding (one row per token) and of
//     index_select (one slice per index);
//   - every constant a delegate asked for at init (Module::
//     delegateConstants), in full, except the tables it said it only
//     gathers from (Module::delegateGatherTables): one row per token;
//   - the mutable buffers (KV caches): a buffer with a dimension of the
//     program's context length is read up to the current position (at
//     position p, p + 1 of its rows along that dimension); any other buffer
//     is read in full.
// Activations (planned memory) and writes are left out: for a decode step
// they are kilobytes against the weights' megabytes.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_BENCH_TRAFFIC_H
#define ETLLM_RUNTIME_BENCH_TRAFFIC_H

#include "etllm/runtime/program.h"
#include "etllm/runtime/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace etllm::rt::bench {

struct DecodeTraffic {
  /// Constant bytes one decode step reads (see the file comment).
  uint64_t weightBytes = 0;
  /// Bytes of all constants of the program (what it holds, read or not).
  uint64_t constantBytes = 0;
  /// Of those, bytes of tables read one row per token (embeddings).
  uint64_t gatherTableBytes = 0;
  /// KV-cache bytes read per cached position, summed over the buffers with
  /// a context-length dimension.
  uint64_t kvBytesPerPosition = 0;
  /// Buffers without such a dimension, read in full every step.
  uint64_t otherBufferBytes = 0;
  /// The context length the buffers were matched against.
  int64_t contextLength = 0;

  /// Bytes read by the decode step of the token at position `pos`.
  uint64_t bytesAt(int64_t pos) const {
    return weightBytes + otherBufferBytes +
           kvBytesPerPosition * uint64_t(pos + 1);
  }
  /// Mean bytes per token over the positions [first, first + n).
  double meanBytes(int64_t first, int64_t n) const;
};

/// The context length of `method` (forward(tokens: i64 [1, seq],
/// input_pos: i64 [seq]) -> f32 logits): the bound of its token input, and
/// of the program's max_seq_len (with ring caches, whose calls are bounded
/// by their chunk, the program's context limit); an error when the method
/// has another signature. Reads the program only (no Module).
Result<int64_t> forwardContextLength(const Program &program,
                                     const std::string &method = "forward");

/// The distinct backend ids the program delegates to, in order of first use
/// (a former id as the id of the backend registered under it).
std::vector<std::string> delegateBackends(const Program &program);

/// Analyzes `method` of `module` (created from its program).
Result<DecodeTraffic>
analyzeDecodeTraffic(const Module &module,
                     const std::string &method = "forward");

} // namespace etllm::rt::bench

#endif // ETLLM_RUNTIME_BENCH_TRAFFIC_H
