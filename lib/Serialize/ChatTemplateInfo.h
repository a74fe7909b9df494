//===- ChatTemplateInfo.h - The chat template a program carries -*- C++ -*-===//
//
// Private to lib/Serialize: the program writer calls these two functions to
// find, validate and write the model's chat template (schema
// ChatTemplateInfo).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_SERIALIZE_CHATTEMPLATEINFO_H
#define ETLLM_LIB_SERIALIZE_CHATTEMPLATEINFO_H

#include "etllm/Serialize/ProgramWriter.h"
#include "etllm/schema/program_generated.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace etllm {
namespace formats {
class Checkpoint;
} // namespace formats
namespace rt {
class Tokenizer;
} // namespace rt

struct ChatTemplateData {
  std::string source, bosToken, eosToken;
  std::vector<std::string> stopStrings;
};

/// The chat template to embed: --chat-template FILE, else the checkpoint's
/// (HF chat_template.jinja / tokenizer_config.json `chat_template`, GGUF
/// `tokenizer.chat_template`), with the text of BOS/EOS from the same place
/// or from `tokenizer`. Rendered on sample conversations here, so a template
/// the runtime cannot render fails the export with a clear error. nullopt:
/// the model has none (or --no-chat-template).
mlir::FailureOr<std::optional<ChatTemplateData>>
findChatTemplate(mlir::ModuleOp module, const formats::Checkpoint *checkpoint,
                 const SerializeOptions &options,
                 const rt::Tokenizer *tokenizer);

flatbuffers::Offset<schema::ChatTemplateInfo>
writeChatTemplateInfo(flatbuffers::FlatBufferBuilder &fb,
                      const ChatTemplateData &chat);

} // namespace etllm

#endif // ETLLM_LIB_SERIALIZE_CHATTEMPLATEINFO_H
