//===- etllm-gen-checkpoint.cpp - Synthetic checkpoint generator ----------===//
//
// Writes a Hugging Face directory or a GGUF file with seeded random weights
// for one of the supported architectures; see etllm/Testing/Generator.h.
//
//===----------------------------------------------------------------------===//

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Testing/Generator.h"
#include "etllm/Formats/Limits.h"
#include "etllm/Formats/Lora.h"
#include "etllm/Models/Registry.h"
#include "etllm/runtime/flags.h"

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
    "         [--dtype f32|f16|bf16]\n"
    "         [--gguf-type f32|f16|bf16|q8_0|q4_0|q5_0|q5_1|q4_k|q5_k|q6_k]\n"
    "         [--tied|--untied] [--rope-scaling none|llama3|linear:F|\n"
    "          yarn:FACTOR:ORIGINAL:MSCALE:MSCALE_ALL_DIM]\n"
    "         [--q-lora-rank N --kv-lora-rank N --gguf-kv-b split|joint]\n"
    "         [--vision-preset tiny|clip-vit-b16|clip-vit-l14-336|siglip-tiny|\n"
    "          gemma3-tiny|smolvlm-tiny|smolvlm-256m]\n"
    "         [--seed S] [--verify] -o OUT\n"
    "\n"
    "Writes an HF directory (config.json + model.safetensors) or the GGUF\n"
    "file llama.cpp's converter would make of it. --verify reopens the\n"
    "result and checks its config and tensors. Multi-head latent attention\n"
    "families (DeepSeek) take the LoRA ranks (--q-lora-rank 0: q_proj) and\n"
    "the GGUF form of kv_b_proj (split attn_k_b/attn_v_b, as llama.cpp's\n"
    "converter writes it, or the older joint attn_kv_b). --arch llava is a\n"
    "composite model: a llama decoder, a CLIP vision tower of the\n"
    "--vision-preset, the projector and preprocessor_config.json;\n"
    "--arch gemma3-vision is Gemma 3's (a gemma3 decoder, a SigLIP tower:\n"
    "--vision-preset gemma3-tiny or siglip-tiny, the pooling projector);\n"
    "--arch smolvlm SmolVLM's (a llama decoder, a SigLIP-like tower:\n"
    "--vision-preset smolvlm-tiny or smolvlm-256m, the pixel-shuffle\n"
    "connector).\n"
    "A composite's --format gguf is its decoder, the vocabulary naming the\n"
    "image tokens (scripts/lib/*_mmproj.py write the mmproj from the HF\n"
    "form).\n"
    "\n"
    "       etllm-gen-checkpoint --lora-for BASE --format {hf,gguf}\n"
    "         [--rank N (4)] [--alpha X (8)] [--lora-targets "
    "q_proj,v_proj,...]\n"
    "         [--lora-std X (0.05)] [--dtype f32|f16|bf16]\n"
    "         [--gguf-type f32|f16|bf16|q8_0] [--seed S] -o OUT\n"
    "\n"
    "Writes a random LoRA adapter for the checkpoint BASE: a PEFT directory\n"
    "(adapter_config.json + adapter_model.safetensors) or llama.cpp's LoRA\n"
    "GGUF. One seed gives the same adapter in both forms. Default targets:\n"
    "every linear weight of the decoder layers but routed experts.\n"
    "\n"
    "       etllm-gen-checkpoint --list-families\n"
    "\n"
    "Prints the --arch values, one per line (the family registry).\n";

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

int fail(const std::string &msg) {
  std::fprintf(stderr, "etllm-gen-checkpoint: error: %s\n", msg.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  GeneratorOptions o;
  LoraGeneratorOptions lora;
  bool loraMode = false;
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
    // Sizes go through the runtime's one flag parser (flags.h), bounded
    // as the checkpoint readers bound config values.
    auto intOpt = [&](std::optional<int64_t> &dst) -> int {
      Result<int64_t> n = etllm::rt::parseInteger(
          a, i + 1 < argc ? argv[++i] : nullptr, 1, kMaxConfigDim);
      if (!n.ok())
        return fail(n.message());
      dst = *n;
      return 0;
    };
    if (a == "-h" || a == "--help") {
      std::fputs(usage().c_str(), stdout);
      return 0;
    } else if (a == "--list-families") {
      for (const etllm::models::FamilySpec *f : etllm::models::families())
        std::printf("%s\n", f->id);
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
    } else if (a == "--vision-preset") {
      if (!value(v))
        return fail("--vision-preset needs a value");
      o.visionPreset = v;
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
    } else if (a == "--q-lora-rank") {
      if (intOpt(o.qLoraRank))
        return 1;
    } else if (a == "--kv-lora-rank") {
      if (intOpt(o.kvLoraRank))
        return 1;
    } else if (a == "--gguf-kv-b") {
      if (!value(v))
        return fail("--gguf-kv-b needs a value");
      o.ggufKvB = v;
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
      Result<uint64_t> n =
          etllm::rt::parseUnsigned(a, i + 1 < argc ? argv[++i] : nullptr);
      if (!n.ok())
        return fail(n.message());
      o.seed = *n;
    } else if (a == "--lora-for") {
      if (!value(v))
        return fail("--lora-for needs a checkpoint path");
      lora.base = v;
      loraMode = true;
    } else if (a == "--rank") {
      Result<int64_t> n = etllm::rt::parseInteger(
          a, i + 1 < argc ? argv[++i] : nullptr, 1, kMaxLoraRank);
      if (!n.ok())
        return fail(n.message());
      lora.rank = *n;
    } else if (a == "--alpha" || a == "--lora-std") {
      etllm::rt::NumberRange range{0, 1e6};
      range.minOpen = a == "--lora-std";
      Result<double> x =
          etllm::rt::parseNumber(a, i + 1 < argc ? argv[++i] : nullptr, range);
      if (!x.ok())
        return fail(x.message());
      (a == "--alpha" ? lora.alpha : lora.stdev) = *x;
    } else if (a == "--lora-targets") {
      if (!value(v))
        return fail("--lora-targets needs a comma-separated list");
      std::string list = v;
      for (size_t p = 0; p <= list.size();) {
        size_t q = list.find(',', p);
        if (q == std::string::npos)
          q = list.size();
        if (q == p)
          return fail("--lora-targets: empty module name in '" + list + "'");
        lora.targets.push_back(list.substr(p, q - p));
        p = q + 1;
      }
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
  if (loraMode) {
    if (!sawFormat || o.output.empty())
      return fail("--lora-for needs --format and -o (see --help)");
    if (sawArch || verify)
      return fail("--lora-for takes the architecture from its checkpoint "
                  "(no --arch, no --verify)");
    lora.format = o.format;
    lora.dtype = o.dtype;
    lora.ggufType = o.ggufType;
    lora.seed = o.seed;
    lora.output = o.output;
    Status s = generateLoraAdapter(lora);
    if (!s.ok())
      return fail(s.message());
    std::printf("wrote %s (LoRA rank %lld for %s, %s)\n", lora.output.c_str(),
                static_cast<long long>(lora.rank), lora.base.c_str(),
                lora.format.c_str());
    return 0;
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
        got.tieWordEmbeddings != want->tieWordEmbeddings ||
        got.qLoraRank != want->qLoraRank ||
        got.kvLoraRank != want->kvLoraRank ||
        got.qkNopeHeadDim != want->qkNopeHeadDim ||
        got.vHeadDim != want->vHeadDim)
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
