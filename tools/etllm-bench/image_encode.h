//===- image_encode.h - etllm-bench --image-encode --------------*- C++ -*-===//
#ifndef ETLLM_TOOLS_ETLLM_BENCH_IMAGE_ENCODE_H
#define ETLLM_TOOLS_ETLLM_BENCH_IMAGE_ENCODE_H

#include "etllm/runtime/bench/llama_bench.h"

namespace etllm::rt::bench {

/// Times each program's vision_encoder (-m, -t, -r, --no-warmup,
/// --max-memory, -o md|json|jsonl); the exit status, or the first error.
Result<int> runImageEncode(const BenchParams &params);

} // namespace etllm::rt::bench

#endif // ETLLM_TOOLS_ETLLM_BENCH_IMAGE_ENCODE_H
