//===- tokenizer-gguf-vocab.cpp - Fuzz target: GGUF-embedded vocabularies -===//
//
// tokenizerFromVocab on an EmbeddedVocab read from the input:
//   line 1: model (e.g. "llama", "gpt2"), pre, then the special ids bos eos
//           unk pad eot and add_bos add_space_prefix (0/1), space-separated;
//   then one token per line, "TYPE SCORE TEXT" (TYPE may be "-" for none);
//   a line "--- merges" starts the merges, one "left right" per line (empty
//   lines are skipped).
// Escapes in TEXT and merges: \n, \\ and \xNN. Then everything a loaded
// tokenizer offers (TokenizerFuzz.h).
//
//===----------------------------------------------------------------------===//
#include "TokenizerFuzz.h"

#include <cstdlib>
#include <sstream>

namespace {

std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out.push_back(s[i]);
      continue;
    }
    char c = s[++i];
    if (c == 'n')
      out.push_back('\n');
    else if (c == 'x' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(
          std::strtol(std::string(s.substr(i + 1, 2)).c_str(), nullptr, 16)));
      i += 2;
    } else
      out.push_back(c);
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  auto lines = etllm::fuzz::split(input, "\n", 1 << 20);
  if (lines.empty())
    return 0;
  etllm::rt::EmbeddedVocab v;
  {
    std::istringstream header{std::string(lines[0])};
    int addBos = 1, addSpace = 1;
    header >> v.model >> v.pre >> v.bos >> v.eos >> v.unk >> v.pad >> v.eot >>
        addBos >> addSpace;
    if (v.pre == "-")
      v.pre.clear();
    v.addBos = addBos != 0;
    v.addSpacePrefix = addSpace != 0;
  }
  bool merges = false, anyType = false;
  std::vector<int32_t> types;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string_view line = lines[i];
    if (line == "--- merges") {
      merges = true;
      continue;
    }
    if (merges) {
      if (!line.empty())
        v.merges.push_back(unescape(line));
      continue;
    }
    auto fields = etllm::fuzz::split(line, " ", 3);
    if (fields.size() < 3)
      continue;
    if (fields[0] != "-") {
      anyType = true;
      types.push_back(std::atoi(std::string(fields[0]).c_str()));
    } else {
      types.push_back(1);
    }
    v.scores.push_back(std::strtof(std::string(fields[1]).c_str(), nullptr));
    v.tokens.push_back(unescape(fields[2]));
  }
  if (anyType)
    v.types = std::move(types);
  auto tok = etllm::rt::tokenizerFromVocab(v, "fuzz-vocab");
  etllm::fuzz::note(tok.ok() ? "loaded" : tok.message());
  if (tok.ok())
    etllm::fuzz::exerciseLoaded(**tok);
  return 0;
}
