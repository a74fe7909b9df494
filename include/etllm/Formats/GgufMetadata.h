//===- GgufMetadata.h - GGUF metadata values --------------------*- C++ -*-===//
//
// The typed key/value metadata of a GGUF file (all GGUF value types, arrays
// possibly nested) and the tokenizer.ggml.* subset in struct form.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_GGUF_METADATA_H
#define ETLLM_FORMATS_GGUF_METADATA_H

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace etllm::formats {

/// GGUF metadata value types, numbered as in the file format.
enum class GgufType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

/// "uint32", "string", "array", ...; "unknown" for out-of-range values.
const char *ggufTypeName(GgufType type);

struct GgufValue;

/// A GGUF array: one element type, possibly itself Array (nested arrays).
struct GgufArray {
  GgufType elementType = GgufType::UInt8;
  std::vector<GgufValue> values;
};

/// One GGUF metadata value. The variant's alternative index equals the
/// GgufType number.
struct GgufValue {
  using Storage =
      std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float,
                   bool, std::string, GgufArray, uint64_t, int64_t, double>;

  GgufValue() = default;
  explicit GgufValue(Storage s) : storage(std::move(s)) {}

  static GgufValue u8(uint8_t v) {
    return GgufValue(Storage(std::in_place_index<0>, v));
  }
  static GgufValue i8(int8_t v) {
    return GgufValue(Storage(std::in_place_index<1>, v));
  }
  static GgufValue u16(uint16_t v) {
    return GgufValue(Storage(std::in_place_index<2>, v));
  }
  static GgufValue i16(int16_t v) {
    return GgufValue(Storage(std::in_place_index<3>, v));
  }
  static GgufValue u32(uint32_t v) {
    return GgufValue(Storage(std::in_place_index<4>, v));
  }
  static GgufValue i32(int32_t v) {
    return GgufValue(Storage(std::in_place_index<5>, v));
  }
  static GgufValue f32(float v) {
    return GgufValue(Storage(std::in_place_index<6>, v));
  }
  static GgufValue boolean(bool v) {
    return GgufValue(Storage(std::in_place_index<7>, v));
  }
  static GgufValue str(std::string v) {
    return GgufValue(Storage(std::in_place_index<8>, std::move(v)));
  }
  static GgufValue array(GgufArray v) {
    return GgufValue(Storage(std::in_place_index<9>, std::move(v)));
  }
  static GgufValue u64(uint64_t v) {
    return GgufValue(Storage(std::in_place_index<10>, v));
  }
  static GgufValue i64(int64_t v) {
    return GgufValue(Storage(std::in_place_index<11>, v));
  }
  static GgufValue f64(double v) {
    return GgufValue(Storage(std::in_place_index<12>, v));
  }
  /// Arrays of common element types.
  static GgufValue strings(const std::vector<std::string> &v);
  static GgufValue floats(const std::vector<float> &v);
  static GgufValue int32s(const std::vector<int32_t> &v);

  GgufType type() const { return static_cast<GgufType>(storage.index()); }

  /// Any integer type whose value fits int64.
  std::optional<int64_t> toInt() const;
  /// Any non-negative integer.
  std::optional<uint64_t> toUInt() const;
  /// Float32/Float64, or an integer converted.
  std::optional<double> toFloat() const;
  std::optional<bool> toBool() const;
  /// Null unless the value is a String.
  const std::string *toString() const;
  /// Null unless the value is an Array.
  const GgufArray *toArray() const;

  Storage storage;
};

/// The tokenizer.ggml.* metadata of a GGUF file, validated at open (types,
/// array lengths, ids in range). Ids are -1 when absent (the 0xFFFFFFFF
/// "none" value of uint32 ids is also -1).
struct GgufTokenizerInfo {
  /// tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (byte-level BPE),
  /// "bert", "t5", "none", ...
  std::string model;
  /// tokenizer.ggml.pre: BPE pre-tokenizer name ("llama-bpe", "qwen2", ...).
  std::string pre;
  std::vector<std::string> tokens;
  /// Empty when absent; else one per token.
  std::vector<float> scores;
  /// Empty when absent; else one per token (1 normal, 2 unknown, 3 control,
  /// 4 user defined, 5 unused, 6 byte).
  std::vector<int32_t> tokenTypes;
  /// BPE merges "left right".
  std::vector<std::string> merges;
  int64_t bosTokenId = -1;
  int64_t eosTokenId = -1;
  int64_t unknownTokenId = -1;
  int64_t paddingTokenId = -1;
  int64_t separatorTokenId = -1;
  int64_t eotTokenId = -1;
  std::optional<bool> addBosToken;
  std::optional<bool> addEosToken;
  std::optional<bool> addSpacePrefix;
  /// tokenizer.chat_template, empty when absent.
  std::string chatTemplate;
};

} // namespace etllm::formats

#endif // ETLLM_FORMATS_GGUF_METADATA_H
