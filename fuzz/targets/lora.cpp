//===- lora.cpp - Fuzz target: PEFT LoRA adapters
//--------------------------===//
//
// The input is adapter_config.json, the separator line below, then
// adapter_model.safetensors; both go into a directory that
// LoraAdapter::open reads (the PEFT entry point etllm-export's --lora
// uses: config keys, the safetensors header, tensor names, pairing, ranks,
// dtypes), opened as the directory and as the .safetensors path. An input
// without the separator is the .safetensors file next to a fixed valid
// config. When the adapter opens, every target is merged (mergeInto) into a
// small zero weight of its shape with scale 0, which must leave the weight
// unchanged (and an error is fine: NaN or infinity in A or B).
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "etllm/Formats/Lora.h"

#include <cmath>
#include <vector>

namespace {

constexpr std::string_view kSeparator = "\n--- adapter_model.safetensors ---\n";
constexpr std::string_view kConfig =
    R"({"peft_type": "LORA", "r": 2, "lora_alpha": 4, "bias": "none",)"
    R"( "target_modules": ["q_proj", "v_proj"]})";
/// Weights merged per target at most (elements).
constexpr int64_t kMaxMergeElements = int64_t(1) << 18;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace etllm::fuzz;
  std::string_view input(reinterpret_cast<const char *>(data), size);
  auto parts = split(input, kSeparator, 2);
  // Both files are rewritten for every input (no state from the last one).
  writeScratch("lora/adapter_config.json",
               parts.size() == 2 ? parts[0] : kConfig);
  const std::string weights =
      writeScratch("lora/adapter_model.safetensors",
                   parts.size() == 2 ? parts[1] : parts[0]);
  for (const std::string &path : {scratchDir() + "/lora", weights}) {
    auto adapter = etllm::formats::LoraAdapter::open(path);
    if (!adapter.ok()) {
      note(adapter.message());
      continue;
    }
    note("opened an adapter of rank " + std::to_string((*adapter)->rank()) +
         " with " + std::to_string((*adapter)->targets().size()) + " targets");
    ETLLM_FUZZ_CHECK((*adapter)->rank() >= 1 &&
                     (*adapter)->rank() <= etllm::formats::kMaxLoraRank);
    for (const auto &[name, target] : (*adapter)->targets()) {
      ETLLM_FUZZ_CHECK(target.a && target.b);
      ETLLM_FUZZ_CHECK(target.a->shape.size() == 2 &&
                       target.b->shape.size() == 2);
      ETLLM_FUZZ_CHECK((*adapter)->find(name) == &target);
      const int64_t rows = target.b->shape[0], cols = target.a->shape[1];
      if (rows > kMaxMergeElements / cols)
        continue;
      std::vector<float> w(size_t(rows * cols), 0.0f);
      etllm::formats::Status st =
          (*adapter)->mergeInto(name, 0.0, rows, cols, w.data());
      if (!st.ok()) {
        note(st.message());
        continue;
      }
      for (float x : w)
        ETLLM_FUZZ_CHECK(x == 0.0f && !std::signbit(x));
    }
  }
  return 0;
}
