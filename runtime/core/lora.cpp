//===- lora.cpp - LoRA adapter files and their application ----------------===//
//
// An adapter file is hostile input like a program: it is verified
// completely (flatbuffers Verifier, then every count, shape, the base hash
// and every value) before anything uses it, and applying it to a Module
// only changes the per-hook lists of (A^T, B^T, rank, scale) the `lora`
// kernel reads.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/lora.h"

#include "etllm/runtime/mapped_file.h"
#include "etllm/runtime/program.h"
#include "etllm/schema/lora_generated.h"

#include <flatbuffers/flatbuffers.h>

#include <cmath>
#include <cstring>
#include <map>

// The matrices are read in place as the host's values, which are the
// file's (little-endian, as the program's weight segments).
static_assert(FLATBUFFERS_LITTLEENDIAN,
              "LoRA adapter matrices are read in place as little-endian");

namespace etllm::rt {

namespace lfb = ::etllm::lora;

Result<std::shared_ptr<const LoraAdapter>>
LoraAdapter::load(const std::string &path, const Program &program) {
  Result<std::shared_ptr<MappedFile>> f =
      MappedFile::open(path, MappedFile::Use::Weights);
  if (!f.ok())
    return f.error();
  return loadFromBuffer((*f)->data(), (*f)->size(), path, program);
}

Result<std::shared_ptr<const LoraAdapter>>
LoraAdapter::loadFromBuffer(const uint8_t *data, size_t size,
                            const std::string &name, const Program &program) {
  auto bad = [&](const std::string &what) {
    return Error(name + ": invalid LoRA adapter: " + what);
  };
  if (program.loraHooks().empty())
    return Error(name + ": the program " + program.name() +
                 " has no LoRA hooks (export it with "
                 "lora_runtime.targets, docs/LoRA.md)");
  // Flatbuffers' 2 GiB limit; an adapter is far smaller.
  if (size < 8 || size >= (size_t(1) << 31))
    return bad("the file is " + std::to_string(size) +
               " bytes (truncated, or not an adapter file)");
  std::shared_ptr<LoraAdapter> a(new LoraAdapter());
  a->name_ = name;
  // A copy, 8-byte aligned (the flatbuffer's widest scalars): the matrices
  // are used in place.
  a->bytes_.resize((size + 7) / 8);
  std::memcpy(a->bytes_.data(), data, size);
  const uint8_t *buf = reinterpret_cast<const uint8_t *>(a->bytes_.data());
  if (!lfb::AdapterBufferHasIdentifier(buf))
    return bad("no 'ETLA' file identifier (not an etllm adapter file)");
  flatbuffers::Verifier::Options vo;
  vo.max_depth = 16;
  vo.max_tables = 1 << 20;
  flatbuffers::Verifier verifier(buf, size, vo);
  if (!lfb::VerifyAdapterBuffer(verifier))
    return bad("the flatbuffer does not verify (truncated or corrupt)");
  const lfb::Adapter *fa = lfb::GetAdapter(buf);
  if (fa->format_version() != kLoraFormatVersion)
    return bad("format version " + std::to_string(fa->format_version()) +
               " (this runtime reads version " +
               std::to_string(kLoraFormatVersion) + ")");
  a->baseHash_ = fa->base_hash()->str();
  if (a->baseHash_ != program.contentHash())
    return Error(name + ": made for another program (base hash " +
                 a->baseHash_ + "), not " + program.name() + " (" +
                 program.contentHash() + ")");
  a->rank_ = fa->rank();
  a->alpha_ = fa->alpha();
  a->scaling_ = fa->scaling();
  if (a->rank_ < 1 || a->rank_ > program.loraMaxRank())
    return Error(name + ": rank " + std::to_string(a->rank_) +
                 " is outside 1.." + std::to_string(program.loraMaxRank()) +
                 " (the maximum " + program.name() +
                 " was exported with: "
                 "lora_runtime.max_rank)");
  if (!std::isfinite(a->alpha_) || !std::isfinite(a->scaling_))
    return bad("alpha or scaling is not a finite number");
  std::map<std::string, uint32_t> hooks;
  for (size_t i = 0; i < program.loraHooks().size(); ++i)
    hooks[program.loraHooks()[i].name] = uint32_t(i);
  const uint32_t n = fa->targets() ? fa->targets()->size() : 0;
  if (n == 0)
    return bad("no targets");
  std::vector<bool> seen(program.loraHooks().size());
  for (uint32_t i = 0; i < n; ++i) {
    const lfb::LoraTarget *t = fa->targets()->Get(i);
    const std::string tname = t->name()->str();
    auto tbad = [&](const std::string &what) {
      return Error(name + ": target '" + tname + "': " + what);
    };
    auto it = hooks.find(tname);
    if (it == hooks.end())
      return tbad("the program " + program.name() +
                  " has no LoRA hook of that name (not a target of its "
                  "lora_runtime.targets)");
    if (seen[it->second])
      return tbad("appears twice");
    seen[it->second] = true;
    const LoraHookInfo &h = program.loraHooks()[it->second];
    if (t->in_features() != h.inFeatures || t->out_features() != h.outFeatures)
      return tbad("shape [" + std::to_string(t->out_features()) + ", " +
                  std::to_string(t->in_features()) + "], the program's is [" +
                  std::to_string(h.outFeatures) + ", " +
                  std::to_string(h.inFeatures) + "]");
    // Each matrix stored one way: f32, half bits or int8 with one scale per
    // rank index; read in place by the kernel.
    struct Stored {
      const void *data = nullptr;
      DType dtype = DType::F32;
      const float *scale = nullptr;
    };
    auto matrix = [&](const char *which, const flatbuffers::Vector<float> *f32,
                      const flatbuffers::Vector<uint16_t> *f16,
                      const flatbuffers::Vector<int8_t> *i8,
                      const flatbuffers::Vector<float> *i8Scale, uint64_t want,
                      Stored &m) -> Status {
      const int forms = (f32 != nullptr) + (f16 != nullptr) + (i8 != nullptr);
      if (forms != 1)
        return tbad(std::string(which) +
                    (forms == 0 ? " is missing"
                                : " is stored more than one way (f32, f16, "
                                  "int8)"));
      if (!i8 && i8Scale)
        return tbad(std::string(which) + " has int8 scales but no int8 values");
      const uint64_t got = f32 ? f32->size() : f16 ? f16->size() : i8->size();
      if (got != want)
        return tbad(std::string(which) + " holds " + std::to_string(got) +
                    " values, [" +
                    (*which == 'A'
                         ? std::to_string(h.inFeatures) + " x rank " +
                               std::to_string(a->rank_)
                         : "rank " + std::to_string(a->rank_) + " x " +
                               std::to_string(h.outFeatures)) +
                    "] needs " + std::to_string(want));
      bool finite = true;
      if (f32) {
        const float *v = f32->data();
        for (uint64_t k = 0; k < want; ++k)
          finite &= std::isfinite(v[k]);
        m = {v, DType::F32, nullptr};
      } else if (f16) {
        // Half bits with an all-ones exponent are infinity or NaN.
        const uint16_t *v = f16->data();
        for (uint64_t k = 0; k < want; ++k)
          finite &= (v[k] & 0x7c00u) != 0x7c00u;
        m = {v, DType::F16, nullptr};
      } else {
        if (!i8Scale || i8Scale->size() != uint64_t(a->rank_))
          return tbad(std::string(which) + " is int8 with " +
                      std::to_string(i8Scale ? i8Scale->size() : 0) +
                      " scales, rank " + std::to_string(a->rank_) +
                      " needs one per rank index");
        for (float s : *i8Scale)
          if (!std::isfinite(s) || s < 0)
            return tbad(std::string(which) + " has the int8 scale " +
                        std::to_string(s) + " (finite and >= 0 required)");
        m = {i8->data(), DType::I8, i8Scale->data()};
      }
      if (!finite)
        return tbad(std::string(which) + " holds NaN or infinity");
      return Status();
    };
    const uint64_t wantA = uint64_t(h.inFeatures) * uint64_t(a->rank_);
    const uint64_t wantB = uint64_t(a->rank_) * uint64_t(h.outFeatures);
    Stored sa, sb;
    ETLLM_RETURN_IF_ERROR(matrix("A", t->a_t(), t->a_t_f16(), t->a_t_i8(),
                                 t->a_t_scale(), wantA, sa));
    ETLLM_RETURN_IF_ERROR(matrix("B", t->b_t(), t->b_t_f16(), t->b_t_i8(),
                                 t->b_t_scale(), wantB, sb));
    a->targets_.push_back(
        {it->second, sa.data, sb.data, sa.dtype, sb.dtype, sa.scale, sb.scale});
  }
  return std::shared_ptr<const LoraAdapter>(std::move(a));
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

Status Module::rebuildLora() {
  const std::vector<LoraHookInfo> &hooks = program_->loraHooks();
  std::vector<LoraHookTerms> terms(hooks.size());
  for (size_t i = 0; i < hooks.size(); ++i) {
    terms[i].inFeatures = hooks[i].inFeatures;
    terms[i].outFeatures = hooks[i].outFeatures;
  }
  for (const auto &[adapter, scale] : loraApplied_) {
    const float s = float(scale * adapter->scaling());
    if (!std::isfinite(s))
      return Error(adapter->name() + ": scale " + std::to_string(scale) +
                   " times the adapter's scaling " +
                   std::to_string(adapter->scaling()) + " is not finite");
    for (const LoraAdapter::Target &t : adapter->targets())
      terms[t.hook].terms.push_back({t.at, t.bt, adapter->rank(), s, t.atType,
                                     t.btType, t.atScale, t.btScale});
  }
  loraTerms_ = std::move(terms);
  ctx_->setLoraHooks(loraApplied_.empty() ? nullptr : &loraTerms_);
  return Status();
}

Status Module::applyLora(std::shared_ptr<const LoraAdapter> adapter,
                         double scale) {
  if (!adapter)
    return Error("applyLora: no adapter");
  // Loaded for this program file (the same bytes: the same hooks).
  if (program_->contentHash().empty() ||
      adapter->baseHash() != program_->contentHash())
    return Error(adapter->name() + ": loaded for another program than " +
                 program_->name());
  if (!std::isfinite(scale))
    return Error(adapter->name() + ": the scale is not a finite number");
  for (const auto &applied : loraApplied_)
    if (applied.first.get() == adapter.get())
      return Error(adapter->name() + ": already applied (setLoraScale "
                                     "changes its scale)");
  loraApplied_.push_back({std::move(adapter), scale});
  Status st = rebuildLora();
  if (!st.ok()) {
    loraApplied_.pop_back();
    (void)rebuildLora();
  }
  return st;
}

Status Module::setLoraScale(const LoraAdapter &adapter, double scale) {
  if (!std::isfinite(scale))
    return Error(adapter.name() + ": the scale is not a finite number");
  for (auto &applied : loraApplied_)
    if (applied.first.get() == &adapter) {
      double old = applied.second;
      applied.second = scale;
      Status st = rebuildLora();
      if (!st.ok()) {
        applied.second = old;
        (void)rebuildLora();
      }
      return st;
    }
  return Error(adapter.name() + ": not applied");
}

Status Module::removeLora(const LoraAdapter &adapter) {
  for (size_t i = 0; i < loraApplied_.size(); ++i)
    if (loraApplied_[i].first.get() == &adapter) {
      loraApplied_.erase(loraApplied_.begin() + i);
      return rebuildLora();
    }
  return Error(adapter.name() + ": not applied");
}

} // namespace etllm::rt
