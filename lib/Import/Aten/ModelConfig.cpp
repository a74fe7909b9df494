//===- ModelConfig.cpp - The model configuration of a captured module -----===//
//
// The typed `#etllm.model_config` attribute from the description's
// `model_config` object: the one place the ATen graph importer makes it.
//
//===----------------------------------------------------------------------===//
#include "Importer.h"

namespace mlir::etllm::aten {

/// The model configuration attribute (`etllm.model_config`) from the
/// description's `model_config` object: the one place this importer makes
/// it. Strings, booleans, integers, floats, integer lists (eos_token_ids)
/// and boolean lists (layer_sliding_window) are kept; anything else is an
/// error naming the key.
/// The typed `#etllm.model_config` of a traced module from the keys the
/// caller gave (the attribute's parameter names; absent keys keep their
/// defaults). An unknown key or a value of the wrong JSON type is an error
/// naming the key.
FailureOr<ModelConfigAttr> modelConfigAttr(Builder &b, const json &cfg,
                                           std::string &error) {
  if (!cfg.is_object()) {
    error = "model_config must be an object";
    return failure();
  }
  std::string architecture, modelType, dtype;
  int64_t hidden = 0, intermediate = 0, layers = 0, heads = 0, kvHeads = 0,
          headDim = 0, vocab = 0, maxSeq = 0, rotary = 0, window = 0, bos = -1,
          qLora = 0, kvLora = 0, qkNope = 0, vHead = 0;
  double eps = 0, theta = 0, scale = 0, attnCap = 0, finalCap = 0;
  bool tied = false;
  SmallVector<int64_t> eos;
  SmallVector<bool> layerWindow;
  auto wrong = [&](const std::string &k, const char *what) {
    error = "model_config key '" + k + "' must be " + what;
    return failure();
  };
  for (auto it = cfg.begin(); it != cfg.end(); ++it) {
    const std::string &k = it.key();
    const json &v = it.value();
    auto str = [&](std::string &out) -> LogicalResult {
      if (!v.is_string())
        return wrong(k, "a string");
      out = v.get<std::string>();
      return success();
    };
    auto integer = [&](int64_t &out) -> LogicalResult {
      if (!v.is_number_integer())
        return wrong(k, "an integer");
      out = v.get<int64_t>();
      return success();
    };
    auto number = [&](double &out) -> LogicalResult {
      if (!v.is_number())
        return wrong(k, "a number");
      out = v.get<double>();
      return success();
    };
    LogicalResult ok = success();
    if (k == "architecture")
      ok = str(architecture);
    else if (k == "model_type")
      ok = str(modelType);
    else if (k == "dtype")
      ok = str(dtype);
    else if (k == "hidden_size")
      ok = integer(hidden);
    else if (k == "intermediate_size")
      ok = integer(intermediate);
    else if (k == "num_hidden_layers")
      ok = integer(layers);
    else if (k == "num_attention_heads")
      ok = integer(heads);
    else if (k == "num_key_value_heads")
      ok = integer(kvHeads);
    else if (k == "head_dim")
      ok = integer(headDim);
    else if (k == "vocab_size")
      ok = integer(vocab);
    else if (k == "max_seq_len")
      ok = integer(maxSeq);
    else if (k == "rotary_dim")
      ok = integer(rotary);
    else if (k == "sliding_window")
      ok = integer(window);
    else if (k == "bos_token_id")
      ok = integer(bos);
    else if (k == "q_lora_rank")
      ok = integer(qLora);
    else if (k == "kv_lora_rank")
      ok = integer(kvLora);
    else if (k == "qk_nope_head_dim")
      ok = integer(qkNope);
    else if (k == "v_head_dim")
      ok = integer(vHead);
    else if (k == "rms_norm_eps")
      ok = number(eps);
    else if (k == "rope_theta")
      ok = number(theta);
    else if (k == "attention_scale")
      ok = number(scale);
    else if (k == "attn_logit_softcapping")
      ok = number(attnCap);
    else if (k == "final_logit_softcapping")
      ok = number(finalCap);
    else if (k == "tie_word_embeddings") {
      if (!v.is_boolean())
        return wrong(k, "a boolean");
      tied = v.get<bool>();
    } else if (k == "eos_token_ids") {
      if (!v.is_array() ||
          !llvm::all_of(v, [](const json &e) { return e.is_number_integer(); }))
        return wrong(k, "a list of integers");
      for (const json &e : v)
        eos.push_back(e.get<int64_t>());
    } else if (k == "layer_sliding_window") {
      if (!v.is_array() ||
          !llvm::all_of(v, [](const json &e) { return e.is_boolean(); }))
        return wrong(k, "a list of booleans");
      for (const json &e : v)
        layerWindow.push_back(e.get<bool>());
    } else {
      error = "model_config has no key '" + k +
              "' (the keys are the parameters of #etllm.model_config: see "
              "docs/generated/EtllmDialect.md)";
      return failure();
    }
    if (failed(ok))
      return failure();
  }
  return ModelConfigAttr::get(
      b.getContext(), architecture, modelType, dtype, hidden, intermediate,
      layers, heads, kvHeads, headDim, vocab, maxSeq, rotary,
      llvm::APFloat(eps), llvm::APFloat(theta), llvm::APFloat(scale), window,
      llvm::APFloat(attnCap), llvm::APFloat(finalCap), tied, bos, eos,
      layerWindow, qLora, kvLora, qkNope, vHead, /*numExperts=*/0,
      /*numExpertsPerTok=*/0,
      /*moeIntermediateSize=*/0, /*sharedExpertIntermediateSize=*/0,
      /*normTopkProb=*/false, /*moeScoring=*/"", /*moeTopkMethod=*/"",
      /*nGroup=*/0, /*topkGroup=*/0, llvm::APFloat(0.0),
      /*layerMoe=*/ArrayRef<bool>());
}

} // namespace mlir::etllm::aten
