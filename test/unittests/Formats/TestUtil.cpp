//===- TestUtil.cpp -------------------------------------------------------===//
#include "TestUtil.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace etllm::formats::testing {

std::string sharedDir() {
#ifdef ETLLM_SHARED_DIR
  return ETLLM_SHARED_DIR;
#else
  return "../shared";
#endif
}

std::string sharedFile(const std::string &relative) {
  std::string p = sharedDir() + "/" + relative;
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 ? p : std::string();
}

namespace {
/// The directories freshTempDir made; removed when the test binary exits
/// (set ETLLM_KEEP_TEST_FILES=1 to keep them for debugging).
struct TempDirs {
  std::vector<std::string> dirs;
  ~TempDirs() {
    if (std::getenv("ETLLM_KEEP_TEST_FILES"))
      return;
    for (const std::string &d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};
TempDirs &tempDirs() {
  static TempDirs t;
  return t;
}
} // namespace

std::string freshTempDir(const std::string &name) {
  std::string base = ::testing::TempDir();
  if (!base.empty() && base.back() != '/')
    base += '/';
  std::string dir =
      base + "etllm_formats_" + std::to_string(::getpid()) + "_" + name;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  EXPECT_TRUE(std::filesystem::create_directories(dir, ec))
      << dir << ": " << ec.message();
  tempDirs().dirs.push_back(dir);
  return dir;
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(f.good()) << path;
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::string readFile(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

static bool close(double a, double b) {
  return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b)) ||
         a == b;
}

void expectConfigsEqual(const ModelConfig &a, const ModelConfig &b,
                        const std::string &what, bool compareDtype) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.architecture, b.architecture);
  EXPECT_EQ(a.modelType, b.modelType);
  EXPECT_EQ(a.hiddenSize, b.hiddenSize);
  EXPECT_EQ(a.intermediateSize, b.intermediateSize);
  EXPECT_EQ(a.numLayers, b.numLayers);
  EXPECT_EQ(a.numHeads, b.numHeads);
  EXPECT_EQ(a.numKvHeads, b.numKvHeads);
  EXPECT_EQ(a.headDim, b.headDim);
  EXPECT_EQ(a.vocabSize, b.vocabSize);
  EXPECT_EQ(a.maxPositionEmbeddings, b.maxPositionEmbeddings);
  EXPECT_TRUE(close(a.rmsNormEps, b.rmsNormEps))
      << a.rmsNormEps << " vs " << b.rmsNormEps;
  EXPECT_TRUE(close(a.ropeTheta, b.ropeTheta))
      << a.ropeTheta << " vs " << b.ropeTheta;
  EXPECT_EQ(a.ropeScaling.type, b.ropeScaling.type);
  EXPECT_TRUE(close(a.ropeScaling.factor, b.ropeScaling.factor));
  if (a.ropeScaling.type == "llama3") {
    EXPECT_TRUE(
        close(a.ropeScaling.lowFreqFactor, b.ropeScaling.lowFreqFactor));
    EXPECT_TRUE(
        close(a.ropeScaling.highFreqFactor, b.ropeScaling.highFreqFactor));
    EXPECT_EQ(a.ropeScaling.originalMaxPositionEmbeddings,
              b.ropeScaling.originalMaxPositionEmbeddings);
  }
  if (a.ropeScaling.type == "yarn") {
    EXPECT_EQ(a.ropeScaling.originalMaxPositionEmbeddings,
              b.ropeScaling.originalMaxPositionEmbeddings);
    EXPECT_TRUE(close(a.ropeScaling.betaFast, b.ropeScaling.betaFast));
    EXPECT_TRUE(close(a.ropeScaling.betaSlow, b.ropeScaling.betaSlow));
    EXPECT_TRUE(close(a.ropeScaling.mscale, b.ropeScaling.mscale));
    EXPECT_TRUE(close(a.ropeScaling.mscaleAllDim, b.ropeScaling.mscaleAllDim));
  }
  EXPECT_EQ(a.qLoraRank, b.qLoraRank);
  EXPECT_EQ(a.kvLoraRank, b.kvLoraRank);
  EXPECT_EQ(a.qkNopeHeadDim, b.qkNopeHeadDim);
  EXPECT_EQ(a.vHeadDim, b.vHeadDim);
  EXPECT_EQ(a.firstKDenseReplace, b.firstKDenseReplace);
  EXPECT_TRUE(close(a.partialRotaryFactor, b.partialRotaryFactor));
  EXPECT_EQ(a.originalMaxPositionEmbeddings, b.originalMaxPositionEmbeddings);
  EXPECT_EQ(a.tieWordEmbeddings, b.tieWordEmbeddings);
  EXPECT_EQ(a.attentionBias, b.attentionBias);
  EXPECT_EQ(a.oProjBias, b.oProjBias);
  EXPECT_EQ(a.mlpBias, b.mlpBias);
  EXPECT_EQ(a.hiddenAct, b.hiddenAct);
  EXPECT_EQ(a.slidingWindow, b.slidingWindow);
  EXPECT_EQ(a.layerUsesSlidingWindow, b.layerUsesSlidingWindow);
  EXPECT_TRUE(close(a.attnLogitSoftcapping, b.attnLogitSoftcapping));
  EXPECT_TRUE(close(a.finalLogitSoftcapping, b.finalLogitSoftcapping));
  EXPECT_TRUE(close(a.queryPreAttnScalar, b.queryPreAttnScalar));
  EXPECT_TRUE(close(a.embeddingMultiplier, b.embeddingMultiplier));
  EXPECT_TRUE(close(a.residualMultiplier, b.residualMultiplier));
  EXPECT_TRUE(close(a.logitsScaling, b.logitsScaling));
  EXPECT_TRUE(close(a.attentionMultiplier, b.attentionMultiplier));
  EXPECT_EQ(a.bosTokenId, b.bosTokenId);
  EXPECT_EQ(a.eosTokenIds, b.eosTokenIds);
  EXPECT_EQ(a.padTokenId, b.padTokenId);
  if (compareDtype) {
    EXPECT_EQ(a.torchDtype, b.torchDtype);
  }
  EXPECT_EQ(a.fusedQkv, b.fusedQkv);
  EXPECT_EQ(a.fusedGateUp, b.fusedGateUp);
  EXPECT_EQ(a.qkNorm, b.qkNorm);
  EXPECT_EQ(a.normAddsOne, b.normAddsOne);
  EXPECT_EQ(a.scaleEmbeddings, b.scaleEmbeddings);
  EXPECT_EQ(a.sandwichNorms, b.sandwichNorms);
}

} // namespace etllm::formats::testing
