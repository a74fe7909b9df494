//===- safetensors.cpp - Fuzz target: Hugging Face directories ------------===//
//
// The input is config.json, the separator line below, then
// model.safetensors; both go into a directory that openCheckpoint reads as
// a Hugging Face checkpoint (config parsing, safetensors header, offsets,
// validation against the config), then the tensors' float conversion. An
// input without the separator is a bare .safetensors file.
//
//===----------------------------------------------------------------------===//
#include "CheckpointFuzz.h"

namespace {
constexpr std::string_view kSeparator = "\n--- model.safetensors ---\n";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  auto parts = etllm::fuzz::split(input, kSeparator, 2);
  if (parts.size() == 1) {
    etllm::fuzz::fuzzCheckpoint(
        etllm::fuzz::writeScratch("bare.safetensors", input));
    return 0;
  }
  etllm::fuzz::writeScratch("hf/config.json", parts[0]);
  etllm::fuzz::writeScratch("hf/model.safetensors", parts[1]);
  // A composite model (LLaVA) also reads its image processor's
  // configuration: a fixed CLIP one, so the input's config.json and tensors
  // go the whole way.
  etllm::fuzz::writeScratch(
      "hf/preprocessor_config.json",
      R"({"do_resize": true, "size": {"shortest_edge": 32}, "resample": 3,
          "do_center_crop": true, "crop_size": {"height": 32, "width": 32},
          "do_rescale": true, "rescale_factor": 0.00392156862745098,
          "do_normalize": true, "image_mean": [0.5, 0.5, 0.5],
          "image_std": [0.5, 0.5, 0.5]})");
  etllm::fuzz::fuzzCheckpoint(etllm::fuzz::scratchDir() + "/hf");
  return 0;
}
