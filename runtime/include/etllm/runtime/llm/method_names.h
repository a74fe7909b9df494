//===- method_names.h - The methods of a language-model program -*- C++ -*-===//
//
// The entry points the compiler gives a language model's program and the
// runner calls, spelled once for both sides: `forward` (dynamic shapes), or
// a static-shape program's `prefill` and `decode` (etllm-static-methods);
// a composite model (LLaVA, Gemma 3, SmolVLM) adds `vision_encoder` (pixels
// to image features), `token_embedding` (token ids to the decoder's input
// embeddings, scaled as the family scales them) and `text_decoder`
// (embeddings to logits, forward's caches and weights), as ExecuTorch's
// multimodal programs have them.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_METHOD_NAMES_H
#define ETLLM_RUNTIME_LLM_METHOD_NAMES_H

namespace etllm::rt::llm {

inline constexpr const char kForwardMethod[] = "forward";
inline constexpr const char kPrefillMethod[] = "prefill";
inline constexpr const char kDecodeMethod[] = "decode";
inline constexpr const char kVisionEncoderMethod[] = "vision_encoder";
inline constexpr const char kTextDecoderMethod[] = "text_decoder";
inline constexpr const char kTokenEmbeddingMethod[] = "token_embedding";

} // namespace etllm::rt::llm

#endif // ETLLM_RUNTIME_LLM_METHOD_NAMES_H
