//===- hf_json_test.cpp - Hugging Face tokenizer.json ---------------------===//
#include "tokenizer_test_util.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <unordered_map>

namespace etllm::rt::test {
namespace {

using json = nlohmann::json;

std::unique_ptr<Tokenizer> fromJson(const json &j, const std::string &name) {
  std::string text = j.dump();
  auto tok = loadTokenizerFromBuffer(
      reinterpret_cast<const uint8_t *>(text.data()), text.size(), name);
  EXPECT_TRUE(tok.ok()) << tok.message();
  if (!tok.ok())
    return nullptr;
  EXPECT_EQ((*tok)->kind(), TokenizerKind::HuggingFace);
  return std::move(tok).value();
}

//===----------------------------------------------------------------------===//
// GPT-2: the real tokenizer.json (byte-level).
//===----------------------------------------------------------------------===//

TEST(HuggingFace, Gpt2VectorsEncode) {
  // The file's saved "truncation" (max_length 50) is ignored: long cases
  // must come out whole.
  expectFileMatchesVectors(kGpt2Json, kGpt2Vectors, TokenizerKind::HuggingFace,
                           VectorDirection::Encode);
}

TEST(HuggingFace, Gpt2VectorsDecode) {
  expectFileMatchesVectors(kGpt2Json, kGpt2Vectors, TokenizerKind::HuggingFace,
                           VectorDirection::Decode);
}

TEST(HuggingFace, Gpt2SpecialsAndBytes) {
  ETLLM_REQUIRE_SHARED(kGpt2Json);
  auto tok = loadOrFail(sharedPath(kGpt2Json));
  ASSERT_TRUE(tok);
  // No BOS: GPT-2's post-processor adds nothing.
  expectSpecialIds(*tok, 50257, -1, 50256, {50256});
  auto ids = tok->encode("Hello<|endoftext|> world", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{15496, 50256, 995}));
  EXPECT_EQ(tok->decode(*ids), "Hello world"); // special: skipped
  auto plain = tok->encodeOrdinary("<|endoftext|>", false);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(std::count(plain->begin(), plain->end(), 50256), 0);
  EXPECT_EQ(tok->decode(*plain), "<|endoftext|>");
  EXPECT_EQ(tok->idToPiece(995), "\xC4\xA0world"); // "Ġworld"
  EXPECT_EQ(tok->decodeToken(15496, 995), " world");

  expectRoundTrips(*tok, kInvalidUtf8 + " ok");
}

//===----------------------------------------------------------------------===//
// Llama 2 style metaspace BPE, built from the Llama 2 vocabulary the way
// Hugging Face's SentencePiece converter does (merges ordered by the merged
// piece's score), in both the older normalizer form and the Metaspace form.
//===----------------------------------------------------------------------===//

json llama2StyleJson(bool legacyNormalizer) {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  readLlama2cAsSpm(sharedPath(kLlama2Bin), pieces, scores);
  std::unordered_map<std::string, int> id;
  json vocab = json::object();
  for (size_t i = 0; i < pieces.size(); ++i) {
    id.emplace(pieces[i], static_cast<int>(i));
    vocab[pieces[i]] = i;
  }
  struct Merge {
    std::string l, r;
    float score;
  };
  std::vector<Merge> merges;
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::vector<std::string> chars = utf8Chars(pieces[i]);
    std::vector<Merge> local;
    std::string left;
    for (size_t k = 0; k + 1 < chars.size(); ++k) {
      left += chars[k];
      std::string right = pieces[i].substr(left.size());
      if (id.count(left) && id.count(right))
        local.push_back({left, right, scores[i]});
    }
    std::sort(local.begin(), local.end(), [&](const Merge &a, const Merge &b) {
      return std::make_pair(id[a.l], id[a.r]) <
             std::make_pair(id[b.l], id[b.r]);
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(
      merges.begin(), merges.end(),
      [](const Merge &a, const Merge &b) { return a.score > b.score; });
  json jm = json::array();
  for (const Merge &m : merges)
    jm.push_back(json::array({m.l, m.r})); // the [left, right] form

  json j;
  j["version"] = "1.0";
  j["added_tokens"] = json::array();
  for (int i = 0; i < 3; ++i)
    j["added_tokens"].push_back({{"id", i},
                                 {"content", pieces[i]},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false},
                                 {"special", true}});
  const std::string sp = "\xE2\x96\x81";
  if (legacyNormalizer) {
    j["normalizer"] = {
        {"type", "Sequence"},
        {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", sp}},
                                     {{"type", "Replace"},
                                      {"pattern", {{"String", " "}}},
                                      {"content", sp}}})}};
    j["pre_tokenizer"] = nullptr;
    j["decoder"] = {{"type", "Sequence"},
                    {"decoders", json::array({{{"type", "Replace"},
                                               {"pattern", {{"String", sp}}},
                                               {"content", " "}},
                                              {{"type", "ByteFallback"}},
                                              {{"type", "Fuse"}},
                                              {{"type", "Strip"},
                                               {"content", " "},
                                               {"start", 1},
                                               {"stop", 0}}})}};
  } else {
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {{"type", "Metaspace"},
                          {"replacement", sp},
                          {"prepend_scheme", "first"},
                          {"split", false}};
    j["decoder"] = {{"type", "Metaspace"},
                    {"replacement", sp},
                    {"prepend_scheme", "first"},
                    {"split", false}};
  }
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"special_tokens",
       {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", "<unk>"},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", true},
                {"byte_fallback", true},
                {"vocab", vocab},
                {"merges", jm}};
  return j;
}

TEST(HuggingFace, MetaspaceLegacyMatchesLlamaSpmVectors) {
  ETLLM_REQUIRE_SHARED(kLlama2Bin);
  ETLLM_REQUIRE_VECTORS(kSpmVectors);
  auto tok =
      fromJson(llama2StyleJson(/*legacyNormalizer=*/true), "llama2-style.json");
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->bosId(), 1);
  EXPECT_EQ(tok->eosId(), 2);
  expectVectors(*tok, kSpmVectors);

  auto ids = tok->encode("Hello", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 15043}));
  EXPECT_EQ(tok->decodeToken(1, 15043), "Hello");     // after BOS: stripped
  EXPECT_EQ(tok->decodeToken(15043, 3186), " world"); // mid-stream: kept
  EXPECT_EQ(tok->decodeToken(3186, 13), "\n");        // <0x0A>
}

TEST(HuggingFace, MetaspacePreTokenizer) {
  ETLLM_REQUIRE_SHARED(kLlama2Bin);
  auto tok =
      fromJson(llama2StyleJson(/*legacyNormalizer=*/false), "metaspace.json");
  ASSERT_TRUE(tok);
  auto a = tok->encode("Hello world", false);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, (std::vector<int32_t>{15043, 3186}));
  // Metaspace prepends "▁" only when the text does not start with one (HF's
  // non-legacy behaviour): " Hello" is "▁Hello", unlike SentencePiece's
  // "▁▁Hello".
  auto b = tok->encode(" Hello", false);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<int32_t>{15043}));
  // prepend_scheme "first": no "▁" after a special token.
  auto c = tok->encode("<s>Hello", false);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<int32_t>{1, 10994}));
  EXPECT_EQ(tok->idToPiece(10994), "Hello");
  EXPECT_EQ(tok->decode(*a), "Hello world");
  // Byte fallback: "\n" is only <0x0A> (13).
  auto d = tok->encode("\n", false);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, (std::vector<int32_t>{29871, 13}));
}

//===----------------------------------------------------------------------===//
// Llama 3 style: Sequence[Split(Regex), ByteLevel], ignore_merges, built
// from the tiktoken ranks as Hugging Face's converter does.
//===----------------------------------------------------------------------===//

const std::vector<std::string> &llama3Ranks() {
  static const std::vector<std::string> ranks =
      readTiktokenRanks(sharedPath(kLlama3Model));
  return ranks;
}

json llama3StyleJson() {
  const auto &ranks = llama3Ranks();
  json vocab = json::object();
  for (size_t r = 0; r < ranks.size(); ++r)
    vocab[toByteLevel(ranks[r])] = r;
  json merges = json::array();
  for (const auto &[l, r] : mergesFromRanks(ranks))
    merges.push_back(toByteLevel(l) + " " + toByteLevel(r));
  json j;
  j["added_tokens"] = json::array();
  const char *names[] = {"<|begin_of_text|>",
                         "<|end_of_text|>",
                         "<|reserved_special_token_0|>",
                         "<|reserved_special_token_1|>",
                         "<|finetune_right_pad_id|>",
                         "<|step_id|>",
                         "<|start_header_id|>",
                         "<|end_header_id|>",
                         "<|eom_id|>",
                         "<|eot_id|>"};
  for (int i = 0; i < 10; ++i)
    j["added_tokens"].push_back(
        {{"id", 128000 + i}, {"content", names[i]}, {"special", true}});
  j["normalizer"] = nullptr;
  const char *pattern =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", json::array({{{"type", "Split"},
                                      {"pattern", {{"Regex", pattern}}},
                                      {"behavior", "Isolated"},
                                      {"invert", false}},
                                     {{"type", "ByteLevel"},
                                      {"add_prefix_space", false},
                                      {"trim_offsets", true},
                                      {"use_regex", false}}})}};
  j["decoder"] = {{"type", "ByteLevel"},
                  {"add_prefix_space", true},
                  {"trim_offsets", true},
                  {"use_regex", true}};
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       json::array(
           {{{"type", "ByteLevel"}, {"add_prefix_space", true}},
            {{"type", "TemplateProcessing"},
             {"single",
              json::array({{{"SpecialToken",
                             {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                           {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
             {"special_tokens",
              {{"<|begin_of_text|>",
                {{"id", "<|begin_of_text|>"},
                 {"ids", {128000}},
                 {"tokens", {"<|begin_of_text|>"}}}}}}}})}};
  j["model"] = {{"type", "BPE"},
                {"ignore_merges", true},
                {"byte_fallback", false},
                {"vocab", vocab},
                {"merges", merges}};
  return j;
}

TEST(HuggingFace, Llama3StyleMatchesLlamaBpeVectors) {
  ETLLM_REQUIRE_SHARED(kLlama3Model);
  ETLLM_REQUIRE_VECTORS(kBpeVectors);
  auto tok = fromJson(llama3StyleJson(), "llama3-style.json");
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->bosId(), 128000);
  EXPECT_EQ(tok->eosId(), 128001);
  auto stops = tok->stopIds();
  EXPECT_NE(std::find(stops.begin(), stops.end(), 128009), stops.end());
  expectVectors(*tok, kBpeVectors);
  auto ids = tok->encode("<|start_header_id|>system<|end_header_id|>", true);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, (std::vector<int32_t>{128000, 128006, 9125, 128007}));
}

} // namespace
} // namespace etllm::rt::test

namespace etllm::rt::test {
namespace {

// A Split pre-tokenizer with a literal "String" pattern (PCRE2_LITERAL):
// it used to be refused at load ("invalid option bits"), found by the
// tokenizer-hf-json fuzz target's seeds.
TEST(HuggingFace, SplitWithAStringPattern) {
  auto load = [](const std::string &behavior) {
    std::string path = tempPath("split-string.json");
    writeFile(path,
              R"({"pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                  "behavior": ")" +
                  behavior + R"("}, "model": {"type": "BPE", "vocab":
                  {"a": 0, "b": 1, "ab": 2, " ": 3, "a.b": 4, ".": 5},
                  "merges": ["a b"]}})");
    auto tok = loadTokenizer(path);
    std::remove(path.c_str());
    return tok;
  };
  auto removed = load("Removed");
  ASSERT_TRUE(removed.ok()) << removed.message();
  auto ids = (*removed)->encode("ab ab", false);
  ASSERT_TRUE(ids.ok()) << ids.message();
  EXPECT_EQ(*ids, (std::vector<int32_t>{2, 2}));
  auto isolated = load("Isolated");
  ASSERT_TRUE(isolated.ok()) << isolated.message();
  ids = (*isolated)->encode("ab ab", false);
  ASSERT_TRUE(ids.ok()) << ids.message();
  EXPECT_EQ(*ids, (std::vector<int32_t>{2, 3, 2}));
}

} // namespace
} // namespace etllm::rt::test
