//===- VisionWeights.cpp - A composed vision encoder's weights ------------===//
//
// `model.vision_encoder` composes a vision encoder traced from a
// torch.nn.Module (etllm.export_llm) with a decoder checkpoint; the traced
// module's weights are a safetensors file beside its IR. Its tensors join
// the decoder's checkpoint under "vision_tower." (the encoder's parameters
// are renamed the same way when the IR is composed), so the serializer
// reads both through one checkpoint.
//
//===----------------------------------------------------------------------===//
#include "Internal.h"
#include "etllm/Formats/Safetensors.h"
#include "etllm/Models/Multimodal.h"

namespace etllm::formats::detail {

Result<std::unique_ptr<Checkpoint>>
attachVisionWeights(std::unique_ptr<Checkpoint> checkpoint,
                    const std::string &path) {
  Result<std::unique_ptr<Checkpoint>> weights = openSafetensors(path);
  if (!weights)
    return weights.error();
  const std::string prefix = std::string(models::kVisionTowerPath) + ".";
  CheckpointBuilder b(std::move(checkpoint));
  for (const std::shared_ptr<rt::MappedFile> &f : (*weights)->files())
    b.addFile(f);
  for (const TensorRef &t : (*weights)->tensors()) {
    TensorRef r = t;
    r.name = prefix + t.name;
    ETLLM_RETURN_IF_ERROR(b.addTensor(std::move(r)));
  }
  return b.finish();
}

} // namespace etllm::formats::detail
