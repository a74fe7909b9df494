//===- etllm-export-lora.cpp - PEFT adapter to an etllm adapter file ------===//
//
//   etllm-export-lora --base BASE.pte --adapter PEFT_DIR -o OUT.etla
//
// Reads a PEFT adapter (lib/Formats/Lora.cpp: the same reader and checks as
// the merge at export), checks it against the hooks of a program exported
// with `lora_runtime.targets` (every adapted module a hook, its shape, the
// rank within the program's max_rank, every value finite) and writes the
// adapter file (runtime/schema/lora.fbs) named by the program's content
// hash. The file is written whole or not at all (a temporary, renamed); it
// is read back with the runtime's loader before it is kept.
//
//===----------------------------------------------------------------------===//
#include "etllm/Formats/Gguf.h"
#include "etllm/Formats/Lora.h"
#include "etllm/runtime/half.h"
#include "etllm/runtime/lora.h"
#include "etllm/runtime/program.h"
#include "etllm/schema/lora_generated.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include <unistd.h>

namespace {

namespace lfb = ::etllm::lora;
namespace rt = ::etllm::rt;
namespace formats = ::etllm::formats;

const char *kUsage =
    "usage: etllm-export-lora --base BASE.pte --adapter PEFT_DIR -o OUT.etla\n"
    "                         [--dtype f32|f16|int8]\n"
    "\n"
    "Writes the PEFT adapter PEFT_DIR (adapter_config.json +\n"
    "adapter_model.safetensors) as an adapter file for BASE.pte, a program\n"
    "exported with lora_runtime.targets; apply it with\n"
    "`etllm-run BASE.pte --lora OUT.etla[:SCALE]` (docs/LoRA.md).\n"
    "\n"
    "  --dtype f32|f16|int8\n"
    "                    how the file stores the matrices (default: f32),\n"
    "                    read in place by the runtime: f16 halves the file\n"
    "                    and refuses a value outside half's range; int8\n"
    "                    quarters it (symmetric, one scale per rank index\n"
    "                    of each matrix)\n";

int fail(const std::string &msg) {
  std::fprintf(stderr, "etllm-export-lora: error: %s\n", msg.c_str());
  return 1;
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

int main(int argc, char **argv) {
  std::string base, adapterPath, out, dtype = "f32";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string &dst) {
      if (i + 1 >= argc)
        return false;
      dst = argv[++i];
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if ((a == "--base" && value(base)) ||
        (a == "--adapter" && value(adapterPath)) || (a == "-o" && value(out)) ||
        (a == "--dtype" && value(dtype)))
      continue;
    return fail("unknown or incomplete argument '" + a + "' (see --help)");
  }
  if (base.empty() || adapterPath.empty() || out.empty())
    return fail("--base, --adapter and -o are required (see --help)");
  if (dtype != "f32" && dtype != "f16" && dtype != "int8")
    return fail("--dtype '" + dtype + "': expected f32, f16 or int8");
  const bool half = dtype == "f16", int8 = dtype == "int8";

  auto program = rt::Program::load(base);
  if (!program.ok())
    return fail(program.message());
  const rt::Program &p = **program;
  if (p.loraHooks().empty())
    return fail(base + ": the program has no LoRA hooks (export it with "
                       "lora_runtime.targets, docs/LoRA.md)");
  // A GGUF adapter's q/k rows are ordered by the base's heads, and its
  // architecture must be the base's: both from the program's model config.
  formats::LoraAdapter::Base baseInfo;
  baseInfo.path = base;
  try {
    auto cfg = nlohmann::json::parse(p.metadata().modelConfigJson);
    baseInfo.ggufArch =
        formats::ggufArchForModelType(cfg.value("model_type", std::string()));
    baseInfo.numHeads = cfg.value("num_attention_heads", int64_t(0));
    baseInfo.numKvHeads = cfg.value("num_key_value_heads", int64_t(0));
  } catch (const std::exception &e) {
    return fail(base +
                ": the program's model config is not valid JSON: " + e.what());
  }
  auto adapter = formats::LoraAdapter::open(adapterPath, baseInfo);
  if (!adapter)
    return fail(adapter.error().message());
  const formats::LoraAdapter &ad = **adapter;
  // The adapter file has one rank and one scaling (every PEFT adapter; a
  // GGUF adapter whose pairs differ in rank is refused).
  const formats::LoraAdapter::Target &first = ad.targets().begin()->second;
  for (const auto &[weight, t] : ad.targets())
    if (t.rank != first.rank || t.scaling != first.scaling)
      return fail(adapterPath + ": tensor '" + t.a->name + "': rank " +
                  std::to_string(t.rank) + " (scaling " +
                  std::to_string(t.scaling) + ") differs from '" +
                  first.a->name + "'s " + std::to_string(first.rank) +
                  ": adapters at run time have one rank");
  if (ad.rank() > p.loraMaxRank())
    return fail(adapterPath + ": rank " + std::to_string(ad.rank()) +
                " is above the maximum of " + base + " (" +
                std::to_string(p.loraMaxRank()) +
                ", lora_runtime.max_rank at export)");
  std::map<std::string, const rt::LoraHookInfo *> hooks;
  for (const rt::LoraHookInfo &h : p.loraHooks())
    hooks[h.name] = &h;

  flatbuffers::FlatBufferBuilder fb(1 << 20);
  std::vector<flatbuffers::Offset<lfb::LoraTarget>> targets;
  const int64_t r = first.rank;
  for (const auto &[weight, t] : ad.targets()) {
    // "model.layers.0.self_attn.q_proj.weight" -> the hook's module path.
    const std::string module = weight.substr(0, weight.size() - 7);
    auto it = hooks.find(module);
    if (it == hooks.end()) {
      std::string list;
      for (const auto &h : hooks)
        list += (list.empty() ? "" : ", ") + h.first;
      if (list.size() > 400)
        list = list.substr(0, 400) + "...";
      return fail(adapterPath + ": tensor '" + t.a->name + "': module '" +
                  module + "' has no LoRA hook in " + base +
                  " (its hooks: " + list + ")");
    }
    const rt::LoraHookInfo &h = *it->second;
    if (t.a->shape[1] != h.inFeatures || t.b->shape[0] != h.outFeatures)
      return fail(adapterPath + ": tensors '" + t.a->name + "' / '" +
                  t.b->name + "': B A is [" + std::to_string(t.b->shape[0]) +
                  ", " + std::to_string(t.a->shape[1]) + "], the hook '" +
                  module + "' of " + base + " is [" +
                  std::to_string(h.outFeatures) + ", " +
                  std::to_string(h.inFeatures) + "]");
    // A [r, in], B [out, r] in HF row order, finite.
    auto ab = ad.factors(t);
    if (!ab)
      return fail(ab.error().message());
    const std::vector<float> *a = &ab->first, *b = &ab->second;
    // The kernel's layouts: A^T [in, r], B^T [r, out].
    const int64_t in = h.inFeatures, outF = h.outFeatures;
    std::vector<float> at(size_t(in * r)), bt(size_t(r * outF));
    for (int64_t k = 0; k < r; ++k)
      for (int64_t i = 0; i < in; ++i)
        at[size_t(i * r + k)] = (*a)[size_t(k * in + i)];
    for (int64_t o = 0; o < outF; ++o)
      for (int64_t k = 0; k < r; ++k)
        bt[size_t(k * outF + o)] = (*b)[size_t(o * r + k)];
    if (int8) {
      // Symmetric, one scale per rank index k: the largest |value| of A^T's
      // column k (of B^T's row k) maps to 127.
      std::vector<int8_t> a8(at.size()), b8(bt.size());
      std::vector<float> as(static_cast<size_t>(r)), bs(static_cast<size_t>(r));
      auto quantize = [&](const std::vector<float> &v, int64_t rows,
                          int64_t cols, bool perColumn, std::vector<int8_t> &q,
                          std::vector<float> &scales) {
        for (int64_t k = 0; k < r; ++k) {
          const int64_t n = perColumn ? rows : cols;
          auto index = [&](int64_t j) -> size_t {
            return size_t(perColumn ? j * cols + k : k * cols + j);
          };
          float amax = 0;
          for (int64_t j = 0; j < n; ++j)
            amax = std::max(amax, std::fabs(v[index(j)]));
          const float s = amax / 127.0f;
          scales[size_t(k)] = s;
          for (int64_t j = 0; j < n; ++j)
            q[index(j)] = s == 0 ? int8_t(0)
                                 : int8_t(std::lround(std::clamp(
                                       v[index(j)] / s, -127.0f, 127.0f)));
        }
      };
      quantize(at, in, r, true, a8, as);    // A^T [in, r]: per column k
      quantize(bt, r, outF, false, b8, bs); // B^T [r, out]: per row k
      auto name = fb.CreateString(module);
      auto va = fb.CreateVector(a8);
      auto vas = fb.CreateVector(as);
      auto vb = fb.CreateVector(b8);
      auto vbs = fb.CreateVector(bs);
      targets.push_back(lfb::CreateLoraTarget(fb, name, in, outF, 0, 0, 0, 0,
                                              va, vas, vb, vbs));
      continue;
    }
    if (!half) {
      targets.push_back(lfb::CreateLoraTarget(fb, fb.CreateString(module), in,
                                              outF, fb.CreateVector(at),
                                              fb.CreateVector(bt)));
      continue;
    }
    std::vector<uint16_t> at16(at.size()), bt16(bt.size());
    auto toHalf = [&](const std::vector<float> &v, std::vector<uint16_t> &h,
                      const std::string &tensor) -> bool {
      for (size_t k = 0; k < v.size(); ++k) {
        h[k] = rt::floatToHalf(v[k]);
        if (!std::isfinite(rt::halfToFloat(h[k]))) {
          fail(adapterPath + ": tensor '" + tensor + "': the value " +
               std::to_string(v[k]) +
               " is outside f16's range (write it with --dtype f32)");
          return false;
        }
      }
      return true;
    };
    if (!toHalf(at, at16, t.a->name) || !toHalf(bt, bt16, t.b->name))
      return 1;
    targets.push_back(lfb::CreateLoraTarget(fb, fb.CreateString(module), in,
                                            outF, 0, 0, fb.CreateVector(at16),
                                            fb.CreateVector(bt16)));
  }
  std::string source;
  for (const std::string &f : ad.files())
    source += (source.empty() ? "" : ", ") + baseName(f);
  auto root = lfb::CreateAdapter(
      fb, rt::kLoraFormatVersion, fb.CreateString(p.contentHash()), uint32_t(r),
      ad.alpha(), first.scaling, fb.CreateVector(targets),
      fb.CreateString(source));
  lfb::FinishAdapterBuffer(fb, root);

  // What the runtime will read, read back before it is kept.
  auto check = rt::LoraAdapter::loadFromBuffer(fb.GetBufferPointer(),
                                               fb.GetSize(), out, p);
  if (!check.ok())
    return fail("internal error: the adapter does not load back: " +
                check.message());
  std::string tmp = out + ".tmp" + std::to_string(getpid());
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return fail("cannot write '" + tmp + "'");
  bool ok =
      std::fwrite(fb.GetBufferPointer(), 1, fb.GetSize(), f) == fb.GetSize();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::remove(tmp.c_str());
    return fail("cannot write '" + out + "'");
  }
  return 0;
}
