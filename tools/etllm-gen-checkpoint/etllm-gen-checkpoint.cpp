//===- etllm-gen-checkpoint.cpp - Synthetic checkpoint generator ----------===//
//
// Writes a Hugging Face directory or a GGUF file with seeded random weights
// for one of the supported architectures; see etllm/Formats/Generator.h.
//
//===----------------------------------------------------------------------===//

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Generator.h"
#include "etllm/Models/Registry.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

using namespace etllm::formats;

namespace {

const char *kOptions =
    "         [--hidden N --layers N --heads N --kv-heads N --head-dim N\n"
    "          --ffn N --vocab N --max-seq N]\n"
    "         [--experts N --experts-per-tok N --moe-ffn N --shared-ffn N]\n"
    "         [--dtype f32|f16|bf16] [--gguf-type f32|f16|bf16|q8_0|q4_0]\n"
    "         [--tied|--untied] [--rope-scaling none|llama3|linear:F]\n"
    "         [--seed S] [--verify] -o OUT\n"
    "\n"
    "Writes an HF directory (config.json + model.safetensors) or the GGUF\n"
    "file llama.cpp's converter would make of it. --verify reopens the\n"
    "result and checks its config and tensors.\n";

std::string usage() {
  std::string archs, presets = "tiny";
  for (const etllm::models::FamilySpec *f : etllm::models::families()) {
    archs += std::string(archs.empty() ? "" : ",") + f->id;
    for (const etllm::models::GeneratorPreset &p : f->generator.presets)
      presets += std::string("|") + p.name;
  }
  return "usage: etllm-gen-checkpoint --arch {" + archs + "}\n" +
         "         --format {hf,gguf} [--preset " + presets + "]\n" + kOptions;
}

bool parseInt(const char *s, int64_t &out) {
  if (!s || !*s)
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (errno || *end)
    return false;
  out = v;
  return true;
}

int fail(const std::string &msg) {
  std::fprintf(stderr, "etllm-gen-checkpoint: error: %s\n", msg.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  GeneratorOptions o;
  bool verify = false;
  bool sawArch = false, sawFormat = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *&out) -> bool {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    const char *v = nullptr;
    auto intOpt = [&](std::optional<int64_t> &dst) -> int {
      int64_t n;
      if (!value(v) || !parseInt(v, n))
        return fail(a + " needs an integer argument");
      dst = n;
      return 0;
    };
    if (a == "-h" || a == "--help") {
      std::fputs(usage().c_str(), stdout);
      return 0;
    } else if (a == "--arch") {
      if (!value(v))
        return fail("--arch needs a value");
      o.arch = v;
      sawArch = true;
    } else if (a == "--format") {
      if (!value(v))
        return fail("--format needs a value");
      o.format = v;
      sawFormat = true;
    } else if (a == "--preset") {
      if (!value(v))
        return fail("--preset needs a value");
      o.preset = v;
    } else if (a == "--hidden") {
      if (intOpt(o.hidden))
        return 1;
    } else if (a == "--layers") {
      if (intOpt(o.layers))
        return 1;
    } else if (a == "--heads") {
      if (intOpt(o.heads))
        return 1;
    } else if (a == "--kv-heads") {
      if (intOpt(o.kvHeads))
        return 1;
    } else if (a == "--head-dim") {
      if (intOpt(o.headDim))
        return 1;
    } else if (a == "--ffn") {
      if (intOpt(o.ffn))
        return 1;
    } else if (a == "--vocab") {
      if (intOpt(o.vocab))
        return 1;
    } else if (a == "--max-seq") {
      if (intOpt(o.maxSeq))
        return 1;
    } else if (a == "--experts") {
      if (intOpt(o.experts))
        return 1;
    } else if (a == "--experts-per-tok") {
      if (intOpt(o.expertsPerTok))
        return 1;
    } else if (a == "--moe-ffn") {
      if (intOpt(o.moeFfn))
        return 1;
    } else if (a == "--shared-ffn") {
      if (intOpt(o.sharedFfn))
        return 1;
    } else if (a == "--dtype" || a == "--gguf-type") {
      if (!value(v))
        return fail(a + " needs a value");
      Result<DType> d = parseDType(v);
      if (!d)
        return fail(a + ": " + d.message());
      if (a == "--dtype")
        o.dtype = *d;
      else
        o.ggufType = *d;
    } else if (a == "--tied") {
      o.tied = true;
    } else if (a == "--untied") {
      o.tied = false;
    } else if (a == "--rope-scaling") {
      if (!value(v))
        return fail("--rope-scaling needs a value");
      o.ropeScaling = v;
    } else if (a == "--seed") {
      int64_t n;
      if (!value(v) || !parseInt(v, n))
        return fail("--seed needs an integer argument");
      o.seed = static_cast<uint64_t>(n);
    } else if (a == "--verify") {
      verify = true;
    } else if (a == "-o" || a == "--output") {
      if (!value(v))
        return fail(a + " needs a path");
      o.output = v;
    } else {
      return fail("unknown argument '" + a + "' (see --help)");
    }
  }
  if (!sawArch || !sawFormat || o.output.empty())
    return fail("--arch, --format and -o are required (see --help)");

  auto start = std::chrono::steady_clock::now();
  Status s = generateCheckpoint(o);
  if (!s.ok())
    return fail(s.message());
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("wrote %s (%s, %s) in %.2f s\n", o.output.c_str(), o.arch.c_str(),
              o.format.c_str(), secs);
  if (verify) {
    Result<std::unique_ptr<Checkpoint>> ck = openCheckpoint(o.output);
    if (!ck)
      return fail("verify: " + ck.message());
    Result<ModelConfig> want = generatorConfig(o);
    if (!want)
      return fail("verify: " + want.message());
    const ModelConfig &got = (*ck)->config();
    if (got.hiddenSize != want->hiddenSize ||
        got.numLayers != want->numLayers || got.numHeads != want->numHeads ||
        got.numKvHeads != want->numKvHeads || got.headDim != want->headDim ||
        got.vocabSize != want->vocabSize ||
        got.intermediateSize != want->intermediateSize ||
        got.tieWordEmbeddings != want->tieWordEmbeddings)
      return fail("verify: the config read back differs from the one "
                  "generated");
    Status v = validateAgainstConfig(**ck, *want);
    if (!v.ok())
      return fail("verify: " + v.message());
    std::printf("verified: %zu tensors, %s\n", (*ck)->tensors().size(),
                got.architecture.c_str());
  }
  return 0;
}
