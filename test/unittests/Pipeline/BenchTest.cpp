//===- BenchTest.cpp - etllm-bench's analyses on exported programs --------===//
//
// The decode traffic of real programs (stories260K through two recipes)
// against what the model's shape says by hand, and the perplexity of a text
// against an independent reference: a llama2.c forward pass (run.c's
// arithmetic, written out here, reading stories260K.bin directly) and
// llama-perplexity's windowing written out again. The runtime path under
// test shares nothing with the reference but the token ids.
//
//===----------------------------------------------------------------------===//
#include "PipelineTestUtil.h"
#include "etllm/Pipeline/Stage.h"
#include "etllm/Testing/Generator.h"
#include "etllm/runtime/backend.h"
#include "etllm/runtime/bench/traffic.h"
#include "etllm/runtime/llm/perplexity.h"
#include "etllm/runtime/program.h"
#include "etllm/runtime/tokenizer.h"
#include "etllm/schema/program_generated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace rt = etllm::rt;

std::string shared() { return ETLLM_SHARED_DIR; }
std::string stories() {
  return shared() + "/models/stories260K/stories260K.bin";
}
std::string storiesTokenizer() {
  return shared() + "/models/stories260K/tok512.bin";
}

/// Exports a checkpoint (stories260K by default) with `recipe` into
/// program bytes.
std::string exportStories(const std::string &recipe, bool lastLogitsOnly,
                          int64_t maxSeqLen = 128,
                          const std::string &checkpoint = stories()) {
  etllm::test::ExportForTest o;
  o.recipe = o.pipelineName = recipe;
  o.maxSeqLen = maxSeqLen;
  o.lastLogitsOnly = lastLogitsOnly;
  return etllm::test::exportBytes(checkpoint, o);
}

std::shared_ptr<rt::Program> load(const std::string &bytes) {
  auto p = rt::Program::loadFromBuffer(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), "p.pte");
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.message());
  return p.ok() ? *p : nullptr;
}

// stories260K: dim 64, 5 layers, 8 heads, 4 KV heads (head_dim 8), ffn 172,
// vocab 512. f32 KV caches.
constexpr int64_t kLayers = 5, kKvHeads = 4, kHeadDim = 8;

TEST(DecodeTraffic, PortableReadsEveryWeightOnce) {
  if (!std::filesystem::exists(stories()))
    GTEST_SKIP() << "../shared is absent";
  auto program = load(exportStories("portable", true));
  ASSERT_TRUE(program);
  auto module = rt::Module::create(program);
  ASSERT_TRUE(module.ok()) << module.message();
  auto t = rt::bench::analyzeDecodeTraffic(**module);
  ASSERT_TRUE(t.ok()) << t.message();
  // The tied embedding is also the output layer: read in full.
  EXPECT_EQ(t->weightBytes, t->constantBytes);
  EXPECT_EQ(t->gatherTableBytes, 0u);
  EXPECT_EQ(t->contextLength, 128);
  // K and V of every layer: kv_heads x head_dim f32 per position.
  EXPECT_EQ(t->kvBytesPerPosition,
            uint64_t(kLayers * 2 * kKvHeads * kHeadDim * 4));
  EXPECT_EQ(t->otherBufferBytes, 0u);
  auto ctx = rt::bench::forwardContextLength(*program);
  ASSERT_TRUE(ctx.ok()) << ctx.message();
  EXPECT_EQ(*ctx, 128);
  auto missing = rt::bench::forwardContextLength(*program, "generate");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("no method 'generate'"), std::string::npos);
}

TEST(DecodeTraffic, GatheredEmbeddingAndDelegateWeights) {
  // An untied Llama through cpu-8da4w: its int8 embedding table is a
  // constant of the decoder's delegate, gathered by the delegate's
  // qembedding and used by nothing else. The delegate reports it as a
  // gather table (ConstantTable::noteGatherTable), so a decode step counts
  // one row of it; every other constant is read in full.
  etllm::formats::GeneratorOptions g;
  g.arch = "llama";
  g.format = "hf";
  g.layers = 2;
  g.tied = false;
  g.seed = 3;
  g.output = testing::TempDir() + "/etllm_traffic_untied";
  ASSERT_TRUE(etllm::formats::generateCheckpoint(g).ok());
  auto config = etllm::formats::generatorConfig(g);
  ASSERT_TRUE(config.ok());
  rt::registerBuiltinBackends();
  auto program = load(exportStories("cpu-8da4w", true, 128, g.output));
  ASSERT_TRUE(program);
  auto module = rt::Module::create(program);
  ASSERT_TRUE(module.ok()) << module.message();
  auto t = rt::bench::analyzeDecodeTraffic(**module);
  ASSERT_TRUE(t.ok()) << t.message();
  const auto *consts = program->schema().constants();
  uint64_t table = 0, tables = 0;
  for (uint32_t i = 0; i < consts->size(); ++i)
    if (consts->Get(i)->name()->str().find("embed_tokens") !=
        std::string::npos) {
      table = consts->Get(i)->size();
      ++tables;
    }
  ASSERT_EQ(tables, 1u);
  // The table is the delegate's: the runtime learnt it from the delegate.
  size_t gathers = 0;
  for (size_t d = 0; d < (*module)->numDelegates(); ++d)
    gathers += (*module)->delegateGatherTables(d).size();
  EXPECT_EQ(gathers, 1u);
  const uint64_t rows = uint64_t(config->vocabSize);
  EXPECT_EQ(t->gatherTableBytes, table);
  EXPECT_EQ(t->weightBytes,
            t->constantBytes - table + (table + rows - 1) / rows);
  EXPECT_EQ(t->kvBytesPerPosition,
            uint64_t(config->numLayers * 2 * config->numKvHeads *
                     config->headDim * 4));
}

TEST(DecodeTraffic, ATiedTableIsReadInFull) {
  if (!std::filesystem::exists(stories()))
    GTEST_SKIP() << "../shared is absent";
  // stories260K is tied: cpu-8da4w shares one table between the
  // qembedding and the output layer, which reads all of it every step.
  rt::registerBuiltinBackends();
  auto program = load(exportStories("cpu-8da4w", true));
  ASSERT_TRUE(program);
  auto module = rt::Module::create(program);
  ASSERT_TRUE(module.ok()) << module.message();
  auto t = rt::bench::analyzeDecodeTraffic(**module);
  ASSERT_TRUE(t.ok()) << t.message();
  EXPECT_EQ(t->gatherTableBytes, 0u);
  EXPECT_EQ(t->weightBytes, t->constantBytes);
  for (size_t d = 0; d < (*module)->numDelegates(); ++d)
    EXPECT_TRUE((*module)->delegateGatherTables(d).empty());
}

//===----------------------------------------------------------------------===//
// The perplexity reference
//===----------------------------------------------------------------------===//

/// run.c's transformer, in double precision, on the llama2.c file.
class Llama2cReference {
public:
  explicit Llama2cReference(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    int32_t h[7];
    f.read(reinterpret_cast<char *>(h), sizeof h);
    dim = h[0], hidden = h[1], layers = h[2], heads = h[3], kvHeads = h[4];
    vocab = std::abs(h[5]), seqLen = h[6];
    headDim = dim / heads;
    auto take = [&](std::vector<double> &w, size_t n) {
      std::vector<float> tmp(n);
      f.read(reinterpret_cast<char *>(tmp.data()), n * sizeof(float));
      w.assign(tmp.begin(), tmp.end());
    };
    size_t kvDim = size_t(kvHeads) * headDim;
    take(emb, size_t(vocab) * dim);
    take(rmsAtt, size_t(layers) * dim);
    take(wq, size_t(layers) * dim * dim);
    take(wk, size_t(layers) * dim * kvDim);
    take(wv, size_t(layers) * dim * kvDim);
    take(wo, size_t(layers) * dim * dim);
    take(rmsFfn, size_t(layers) * dim);
    take(w1, size_t(layers) * hidden * dim);
    take(w2, size_t(layers) * dim * hidden);
    take(w3, size_t(layers) * hidden * dim);
    take(rmsFinal, dim);
    ok = bool(f) && h[5] > 0; // a positive vocab size: shared classifier
  }
  bool ok = false;
  int dim, hidden, layers, heads, kvHeads, vocab, seqLen, headDim;

  /// Logits of each position of `tokens` (from an empty cache).
  std::vector<std::vector<double>> forward(const std::vector<int> &tokens) {
    size_t kvDim = size_t(kvHeads) * headDim;
    std::vector<std::vector<double>> kc(layers), vc(layers), out;
    for (size_t pos = 0; pos < tokens.size(); ++pos) {
      std::vector<double> x(emb.begin() + size_t(tokens[pos]) * dim,
                            emb.begin() + size_t(tokens[pos] + 1) * dim);
      for (int l = 0; l < layers; ++l) {
        std::vector<double> xb = rmsnorm(x, &rmsAtt[size_t(l) * dim]);
        std::vector<double> q = matmul(xb, &wq[size_t(l) * dim * dim], dim),
                            k = matmul(xb, &wk[size_t(l) * dim * kvDim], kvDim),
                            v = matmul(xb, &wv[size_t(l) * dim * kvDim], kvDim);
        // RoPE on interleaved pairs, theta 10000.
        for (int i = 0; i < dim; i += 2) {
          int hd = i % headDim;
          double freq = 1.0 / std::pow(10000.0, double(hd) / headDim);
          double c = std::cos(pos * freq), s = std::sin(pos * freq);
          for (int which = 0; which < (size_t(i) < kvDim ? 2 : 1); ++which) {
            std::vector<double> &vec = which == 0 ? q : k;
            double a = vec[i], b = vec[i + 1];
            vec[i] = a * c - b * s;
            vec[i + 1] = a * s + b * c;
          }
        }
        kc[l].insert(kc[l].end(), k.begin(), k.end());
        vc[l].insert(vc[l].end(), v.begin(), v.end());
        std::vector<double> att(dim, 0);
        for (int hh = 0; hh < heads; ++hh) {
          int kvh = hh / (heads / kvHeads);
          std::vector<double> score(pos + 1);
          double mx = -1e300;
          for (size_t t = 0; t <= pos; ++t) {
            double sc = 0;
            for (int i = 0; i < headDim; ++i)
              sc += q[hh * headDim + i] * kc[l][t * kvDim + kvh * headDim + i];
            score[t] = sc / std::sqrt(double(headDim));
            mx = std::max(mx, score[t]);
          }
          double sum = 0;
          for (double &sc : score)
            sum += (sc = std::exp(sc - mx));
          for (size_t t = 0; t <= pos; ++t)
            for (int i = 0; i < headDim; ++i)
              att[hh * headDim + i] +=
                  score[t] / sum * vc[l][t * kvDim + kvh * headDim + i];
        }
        std::vector<double> o = matmul(att, &wo[size_t(l) * dim * dim], dim);
        for (int i = 0; i < dim; ++i)
          x[i] += o[i];
        xb = rmsnorm(x, &rmsFfn[size_t(l) * dim]);
        std::vector<double> a = matmul(xb, &w1[size_t(l) * hidden * dim],
                                       hidden),
                            b = matmul(xb, &w3[size_t(l) * hidden * dim],
                                       hidden);
        for (int i = 0; i < hidden; ++i)
          a[i] = a[i] / (1 + std::exp(-a[i])) * b[i];
        std::vector<double> d = matmul(a, &w2[size_t(l) * dim * hidden], dim);
        for (int i = 0; i < dim; ++i)
          x[i] += d[i];
      }
      x = rmsnorm(x, rmsFinal.data());
      out.push_back(matmul(x, emb.data(), vocab));
    }
    return out;
  }

private:
  std::vector<double> rmsnorm(const std::vector<double> &x, const double *w) {
    double ss = 0;
    for (double v : x)
      ss += v * v;
    double s = 1 / std::sqrt(ss / x.size() + 1e-5);
    std::vector<double> o(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      o[i] = w[i] * x[i] * s;
    return o;
  }
  /// W (d x n, row-major) @ x.
  std::vector<double> matmul(const std::vector<double> &x, const double *w,
                             size_t d) {
    std::vector<double> o(d, 0);
    for (size_t i = 0; i < d; ++i)
      for (size_t j = 0; j < x.size(); ++j)
        o[i] += w[i * x.size() + j] * x[j];
    return o;
  }
  std::vector<double> emb, rmsAtt, wq, wk, wv, wo, rmsFfn, w1, w2, w3, rmsFinal;
};

std::vector<int32_t> storyTokens() {
  std::ifstream f(std::string(ETLLM_SRC_DIR) +
                  "/test/Inputs/perplexity-story.txt");
  std::stringstream ss;
  ss << f.rdbuf();
  auto tok = rt::loadTokenizer(storiesTokenizer());
  EXPECT_TRUE(tok.ok());
  auto ids = (*tok)->encodeOrdinary(ss.str(), /*addBos=*/true);
  EXPECT_TRUE(ids.ok());
  return ids.ok() ? *ids : std::vector<int32_t>();
}

struct Expected {
  double ppl, uncertainty;
  int64_t count;
};

/// llama-perplexity's definition, written out again over the reference.
Expected referencePerplexity(Llama2cReference &ref,
                             const std::vector<int32_t> &tokens, int nCtx,
                             int bos) {
  int nChunk = int(tokens.size()) / nCtx, first = nCtx / 2;
  double nll = 0, nll2 = 0;
  int64_t count = 0;
  for (int c = 0; c < nChunk; ++c) {
    std::vector<int> window(tokens.begin() + c * nCtx,
                            tokens.begin() + (c + 1) * nCtx);
    window[0] = bos;
    auto logits = ref.forward(window);
    for (int p = first; p < nCtx - 1; ++p) {
      const std::vector<double> &l = logits[p];
      double mx = *std::max_element(l.begin(), l.end()), sum = 0;
      for (double v : l)
        sum += std::exp(v - mx);
      double v = std::log(sum) - (l[tokens[c * nCtx + p + 1]] - mx);
      nll += v;
      nll2 += v * v;
      ++count;
    }
  }
  double mean = nll / count, ppl = std::exp(mean);
  double var = nll2 / count - mean * mean;
  return {ppl, std::sqrt(var / (count - 1)) * ppl, count};
}

TEST(Perplexity, MatchesAnIndependentReference) {
  if (!std::filesystem::exists(stories()))
    GTEST_SKIP() << "../shared is absent";
  Llama2cReference ref(stories());
  ASSERT_TRUE(ref.ok);
  std::vector<int32_t> tokens = storyTokens();
  ASSERT_GT(tokens.size(), 1000u);
  ASSERT_EQ(tokens[0], 1); // BOS
  const int nCtx = 64;
  Expected want = referencePerplexity(ref, tokens, nCtx, /*bos=*/1);
  // (floor(tokens / 64) windows) x (64 - 32 - 1) scored tokens.
  EXPECT_EQ(want.count, int64_t(tokens.size() / nCtx) * 31);

  // Both output conventions: every position's logits (one call per window)
  // and the last position's only (prefill, then a decode call per token).
  for (bool lastOnly : {false, true}) {
    SCOPED_TRACE(lastOnly ? "last logits only" : "every position's logits");
    auto program = load(exportStories("portable", lastOnly));
    ASSERT_TRUE(program);
    auto module = rt::Module::create(program);
    ASSERT_TRUE(module.ok()) << module.message();
    auto forward = (*module)->method("forward");
    ASSERT_TRUE(forward.ok());
    rt::llm::PerplexityOptions o;
    o.contextLength = nCtx;
    o.bosId = 1;
    std::vector<double> running;
    auto r = rt::llm::evaluatePerplexity(
        **module, **forward, tokens, o,
        [&](int64_t, double p) { running.push_back(p); });
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->allPositionLogits, !lastOnly);
    EXPECT_EQ(r->scoredTokens, want.count);
    EXPECT_EQ(r->chunks, int64_t(tokens.size() / nCtx));
    EXPECT_EQ(running, r->runningPpl);
    EXPECT_EQ(running.back(), r->ppl);
    // float32 kernels against a double reference.
    EXPECT_NEAR(r->ppl, want.ppl, 2e-5 * want.ppl);
    EXPECT_NEAR(r->pplUncertainty, want.uncertainty, 2e-4 * want.uncertainty);
    // A trained model on a story it can read: far below the vocabulary.
    EXPECT_LT(r->ppl, 64);
    EXPECT_GT(r->ppl, 1);
  }
}

TEST(Perplexity, MaxChunksAndHostileSettings) {
  if (!std::filesystem::exists(stories()))
    GTEST_SKIP() << "../shared is absent";
  std::vector<int32_t> tokens = storyTokens();
  auto program = load(exportStories("portable", false));
  ASSERT_TRUE(program);
  auto module = rt::Module::create(program);
  ASSERT_TRUE(module.ok());
  auto forward = (*module)->method("forward");
  ASSERT_TRUE(forward.ok());
  rt::Method &f = **forward;
  rt::llm::PerplexityOptions o;
  o.contextLength = 32;
  o.maxChunks = 2;
  o.bosId = 1;
  auto r = rt::llm::evaluatePerplexity(**module, f, tokens, o);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->chunks, 2);
  EXPECT_EQ(r->scoredTokens, 2 * 15);

  auto expectError = [&](rt::llm::PerplexityOptions bad,
                         std::vector<int32_t> toks, const std::string &what) {
    auto e = rt::llm::evaluatePerplexity(**module, f, toks, bad);
    ASSERT_FALSE(e.ok()) << what;
    EXPECT_NE(e.message().find(what), std::string::npos) << e.message();
  };
  rt::llm::PerplexityOptions longer = o;
  longer.contextLength = 256;
  expectError(longer, tokens, "longer than the program's context of 128");
  rt::llm::PerplexityOptions tiny = o;
  tiny.contextLength = 2;
  expectError(tiny, tokens, "at least 4 tokens");
  expectError(o, std::vector<int32_t>(tokens.begin(), tokens.begin() + 63),
              "needs at least 64");
  std::vector<int32_t> outside = tokens;
  outside[5] = 512;
  expectError(o, outside, "token id 512 is outside");
  rt::llm::PerplexityOptions badBos = o;
  badBos.bosId = 9999;
  expectError(badBos, tokens, "BOS id 9999");
}

} // namespace
