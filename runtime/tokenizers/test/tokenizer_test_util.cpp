//===- tokenizer_test_util.cpp - Helpers for the tokenizer tests ----------===//
#include "tokenizer_test_util.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

namespace etllm::rt::test {

std::string sharedDir() { return ETLLM_SHARED_DIR; }

std::string sharedPath(const std::string &rel) {
  return sharedDir() + "/" + rel;
}

bool haveShared(const std::string &rel) {
  struct stat st;
  return ::stat(sharedPath(rel).c_str(), &st) == 0;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string tempPath(const std::string &name) {
  static int counter = 0;
  return testing::TempDir() + "etllm_tok_" + std::to_string(::getpid()) + "_" +
         std::to_string(counter++) + "_" + name;
}

std::vector<VocabCase> readVocabCases(const std::string &base) {
  std::vector<VocabCase> cases;
  const std::string inp = readFile(base + ".inp");
  const std::string out = readFile(base + ".out");
  if (inp.empty() || out.empty()) {
    ADD_FAILURE() << "cannot read " << base << ".{inp,out}";
    return cases;
  }
  // Inputs: each case ends with the separator (llama.cpp read_tests()).
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  size_t pos = 0;
  while (pos < inp.size()) {
    size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  // Outputs: one line per case.
  std::vector<std::vector<int32_t>> idLines;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<int32_t> ids;
    for (long v; words >> v;)
      ids.push_back(static_cast<int32_t>(v));
    if (!words.eof())
      ADD_FAILURE() << base << ".out: bad line: " << line;
    idLines.push_back(std::move(ids));
  }
  EXPECT_EQ(texts.size(), idLines.size())
      << base << ": .inp and .out disagree on the number of cases";
  EXPECT_EQ(texts.size(), kVocabCaseCount) << base;
  for (size_t i = 0; i < texts.size() && i < idLines.size(); ++i)
    cases.push_back({texts[i], idLines[i]});
  return cases;
}

std::string idsToString(const std::vector<int32_t> &ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

std::string escape(const std::string &s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::unique_ptr<Tokenizer> loadOrFail(const std::string &path) {
  auto tok = loadTokenizer(path);
  EXPECT_TRUE(tok.ok()) << tok.message();
  if (!tok.ok())
    return nullptr;
  return std::move(tok).value();
}

void expectSpecialIds(const Tokenizer &tok, int32_t vocabSize, int32_t bos,
                      int32_t eos, const std::vector<int32_t> &stops) {
  EXPECT_EQ(tok.vocabSize(), vocabSize);
  EXPECT_EQ(tok.bosId(), bos);
  EXPECT_EQ(tok.eosId(), eos);
  EXPECT_EQ(tok.stopIds(), stops);
}

void expectEncodes(const Tokenizer &tok, std::string_view text, bool addBos,
                   const std::vector<int32_t> &ids) {
  auto got = tok.encode(text, addBos);
  ASSERT_TRUE(got.ok()) << got.message();
  EXPECT_EQ(*got, ids) << "encode('" << escape(std::string(text)) << "')";
}

void expectRoundTrips(const Tokenizer &tok, const std::string &bytes) {
  auto ids = tok.encode(bytes, /*addBos=*/false);
  ASSERT_TRUE(ids.ok()) << ids.message();
  EXPECT_EQ(tok.decode(*ids), bytes) << "'" << escape(bytes) << "'";
}

void expectVectors(const Tokenizer &tok, const std::string &base,
                   VectorDirection dir) {
  const bool encode = dir != VectorDirection::Decode,
             decode = dir != VectorDirection::Encode;
  auto cases = readVocabCases(sharedPath(base));
  size_t encoded = 0, decoded = 0; // cases checked (each a real EXPECT)
  for (size_t i = 0; i < cases.size(); ++i) {
    const VocabCase &c = cases[i];
    if (encode) { // encode(text, addBos=false) == ids
      auto ids = tok.encode(c.text, /*addBos=*/false);
      EXPECT_TRUE(ids.ok()) << "case " << i << ": " << ids.message();
      if (ids.ok()) {
        EXPECT_EQ(*ids, c.ids)
            << "case " << i << " '" << escape(c.text) << "': got "
            << idsToString(*ids) << ", expected " << idsToString(c.ids);
        ++encoded;
      }
    }
    if (decode) { // decode(ids) == text
      std::string text = tok.decode(c.ids);
      EXPECT_EQ(text, c.text)
          << "case " << i << ": decode(" << idsToString(c.ids) << ") = '"
          << escape(text) << "', expected '" << escape(c.text) << "'";
      ++decoded;
    }
  }
  if (encode) {
    EXPECT_EQ(encoded, kVocabCaseCount);
  }
  if (decode) {
    EXPECT_EQ(decoded, kVocabCaseCount);
  }
}

void expectFileMatchesVectors(const std::string &model, const std::string &base,
                              TokenizerKind kind, VectorDirection dir) {
  ETLLM_REQUIRE_SHARED(model);
  ETLLM_REQUIRE_VECTORS(base);
  auto tok = loadOrFail(sharedPath(model));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->kind(), kind);
  expectVectors(*tok, base, dir);
}

std::vector<std::pair<std::string, std::string>>
mergesFromRanks(const std::vector<std::string> &byRank) {
  std::unordered_map<std::string, size_t> rankOf;
  for (size_t r = 0; r < byRank.size(); ++r)
    rankOf.emplace(byRank[r], r);
  std::vector<std::pair<std::string, std::string>> merges;
  for (size_t r = 0; r < byRank.size(); ++r) {
    const std::string &tok = byRank[r];
    if (tok.size() < 2)
      continue;
    std::vector<std::string> parts;
    for (char c : tok)
      parts.emplace_back(1, c);
    while (parts.size() > 2) {
      size_t best = SIZE_MAX, bestRank = r;
      for (size_t i = 0; i + 1 < parts.size(); ++i) {
        auto it = rankOf.find(parts[i] + parts[i + 1]);
        if (it != rankOf.end() && it->second < bestRank) {
          bestRank = it->second;
          best = i;
        }
      }
      if (best == SIZE_MAX)
        break;
      parts[best] += parts[best + 1];
      parts.erase(parts.begin() + static_cast<long>(best) + 1);
    }
    if (parts.size() == 2)
      merges.emplace_back(parts[0], parts[1]);
  }
  return merges;
}

std::vector<std::string> readTiktokenRanks(const std::string &path) {
  std::vector<std::string> byRank;
  std::istringstream in(readFile(path));
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::string line; std::getline(in, line);) {
    size_t sp = line.find(' ');
    if (sp == std::string::npos)
      continue;
    std::string b64 = line.substr(0, sp), bytes;
    size_t rank = std::stoul(line.substr(sp + 1));
    uint32_t acc = 0;
    int bits = 0;
    for (char c : b64) {
      if (c == '=')
        break;
      acc = (acc << 6) | static_cast<uint32_t>(kAlphabet.find(c));
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        bytes.push_back(static_cast<char>((acc >> bits) & 0xFF));
      }
    }
    if (rank >= byRank.size())
      byRank.resize(rank + 1);
    byRank[rank] = bytes;
  }
  return byRank;
}

std::string toByteLevel(const std::string &bytes) {
  std::string out;
  for (unsigned char b : bytes) {
    unsigned cp = b;
    bool printable =
        (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    if (!printable) {
      // The n-th non-printable byte maps to U+0100 + n.
      unsigned n = 0;
      for (unsigned k = 0; k < b; ++k) {
        bool p =
            (k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) || (k >= 0xAE);
        n += !p;
      }
      cp = 0x100 + n;
    }
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return out;
}

void readLlama2cAsSpm(const std::string &path, std::vector<std::string> &pieces,
                      std::vector<float> &scores) {
  std::string data = readFile(path);
  size_t off = 4;
  while (off + 8 <= data.size()) {
    float score;
    int32_t len;
    std::memcpy(&score, data.data() + off, 4);
    std::memcpy(&len, data.data() + off + 4, 4);
    off += 8;
    std::string piece = data.substr(off, static_cast<size_t>(len));
    off += static_cast<size_t>(len);
    std::string spm;
    for (char c : piece)
      spm += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    pieces.push_back(spm);
    scores.push_back(score);
  }
  if (pieces.size() > 2) {
    pieces[0] = "<unk>";
    pieces[1] = "<s>";
    pieces[2] = "</s>";
  }
}

std::vector<std::string> utf8Chars(const std::string &s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    len = std::min(len, s.size() - i);
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

} // namespace etllm::rt::test
