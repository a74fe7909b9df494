//===- program.cpp - Program loading, verification and execution ----------===//
#include "etllm/runtime/program.h"

#include "etllm/runtime/backend.h"
#include "etllm/runtime/flags.h"
#include "etllm/runtime/profile.h"
#include "etllm/runtime/verify_ops.h"
#include "etllm/schema/program_generated.h"

#include <flatbuffers/flatbuffers.h>
#include <pthreadpool.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <unistd.h>

namespace etllm::rt {

namespace fbs = etllm::schema;

namespace {

bool addOverflows(uint64_t a, uint64_t b, uint64_t &out) {
  return __builtin_add_overflow(a, b, &out);
}

/// [offset, offset + size) lies inside [0, limit).
bool inRange(uint64_t offset, uint64_t size, uint64_t limit) {
  uint64_t end;
  return !addOverflows(offset, size, end) && end <= limit;
}

bool validDType(fbs::DType t) {
  return static_cast<unsigned>(t) < static_cast<unsigned>(kNumDTypes);
}

std::string str(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

/// Rejects a program file; every message starts with the file name.
struct Checker {
  const std::string &name;
  Error operator()(const std::string &what) const {
    return Error(name + ": invalid program file: " + what);
  }
};

/// Builds the QuantInfo of a value from the schema.
QuantInfo quantOf(const fbs::Tensor *t) {
  QuantInfo q;
  if (const fbs::QuantParams *p = t->quant()) {
    q.bits = p->bits();
    q.symmetric = p->symmetric();
    q.scaleType = static_cast<DType>(p->scale_dtype());
    q.groupSize = p->group_size();
    q.perToken = p->per_token();
  }
  return q;
}

} // namespace

//===----------------------------------------------------------------------===//
// Loading and verification
//===----------------------------------------------------------------------===//

Result<std::shared_ptr<Program>> Program::load(const std::string &path) {
  Result<std::shared_ptr<MappedFile>> file =
      MappedFile::open(path, MappedFile::Use::Weights);
  if (!file.ok())
    return file.error();
  std::shared_ptr<Program> p(new Program());
  p->name_ = path;
  p->file_ = *file;
  p->data_ = p->file_->data();
  p->size_ = p->file_->size();
  return verify(std::move(p));
}

Result<std::shared_ptr<Program>>
Program::loadFromBuffer(const uint8_t *data, size_t size,
                        const std::string &name) {
  std::shared_ptr<Program> p(new Program());
  p->name_ = name;
  // Copy into 64-byte-aligned storage so segments keep their alignment.
  p->owned_.resize(size + 64);
  uintptr_t base = reinterpret_cast<uintptr_t>(p->owned_.data());
  size_t pad = (64 - base % 64) % 64;
  if (size)
    std::memcpy(p->owned_.data() + pad, data, size);
  p->data_ = p->owned_.data() + pad;
  p->size_ = size;
  return verify(std::move(p));
}

/// True when the 8-byte elements of `v` are 8-aligned (absent or empty:
/// nothing is read; flatbuffers does not align empty vectors).
template <typename T> static bool aligned8(const flatbuffers::Vector<T> *v) {
  static_assert(sizeof(T) == 8);
  return !v || v->size() == 0 ||
         reinterpret_cast<uintptr_t>(v->data()) % 8 == 0;
}

/// The first vector of 8-byte elements that is not 8-aligned (its field's
/// name), or null. Runs after the Verifier (the tables are in bounds).
static const char *misalignedVector(const fbs::Program &prog) {
  if (prog.buffers())
    for (const fbs::Buffer *b : *prog.buffers())
      if (!aligned8(b->sizes()))
        return "Buffer.sizes";
  if (const fbs::Metadata *m = prog.metadata())
    if (!aligned8(m->eos_ids()))
      return "Metadata.eos_ids";
  if (prog.methods())
    for (const fbs::Method *m : *prog.methods()) {
      if (!aligned8(m->arena_sizes()))
        return "Method.arena_sizes";
      if (m->values())
        for (const fbs::Tensor *t : *m->values())
          if (!aligned8(t->sizes()))
            return "Tensor.sizes";
      if (m->instructions())
        for (const fbs::InstructionEntry *e : *m->instructions())
          if (const fbs::KernelCall *k = e->instruction_as_KernelCall())
            if (!aligned8(k->ints()) || !aligned8(k->floats()))
              return "KernelCall.ints or .floats";
    }
  return nullptr;
}

Result<std::shared_ptr<Program>> Program::verify(std::shared_ptr<Program> p) {
  Checker bad{p->name_};
  if (p->size_ < sizeof(FileHeader))
    return bad("the file is " + std::to_string(p->size_) +
               " bytes, smaller than the 64-byte header");
  FileHeader h;
  std::memcpy(&h, p->data_, sizeof h);
  if (std::memcmp(h.magic, kProgramMagic, 8) != 0)
    return bad("bad magic (not an etllm program file)");
  if (h.version < kMinProgramFormatVersion || h.version > kProgramFormatVersion)
    return bad("format version " + std::to_string(h.version) +
               " is not supported (this runtime reads versions " +
               std::to_string(kMinProgramFormatVersion) + " to " +
               std::to_string(kProgramFormatVersion) + ")");
  if (h.headerSize != sizeof(FileHeader))
    return bad("header size " + std::to_string(h.headerSize));
  if (h.flatbufferOffset < sizeof(FileHeader) || h.flatbufferOffset % 8 ||
      !inRange(h.flatbufferOffset, h.flatbufferSize, p->size_) ||
      h.flatbufferSize < 8)
    return bad("flatbuffer range [" + std::to_string(h.flatbufferOffset) +
               ", +" + std::to_string(h.flatbufferSize) +
               ") is outside the file");
  if (h.segmentAlignment == 0 || h.segmentAlignment > 65536 ||
      (h.segmentAlignment & (h.segmentAlignment - 1)) ||
      h.segmentBase % h.segmentAlignment ||
      h.segmentBase < h.flatbufferOffset + h.flatbufferSize ||
      !inRange(h.segmentBase, h.segmentDataSize, p->size_))
    return bad("segment data range [" + std::to_string(h.segmentBase) + ", +" +
               std::to_string(h.segmentDataSize) + ") or alignment " +
               std::to_string(h.segmentAlignment) + " is invalid");

  const uint8_t *fb = p->data_ + h.flatbufferOffset;
  flatbuffers::Verifier::Options vopts;
  vopts.max_depth = 64;
  vopts.max_tables = 10000000;
  flatbuffers::Verifier verifier(fb, h.flatbufferSize, vopts);
  if (!fbs::ProgramBufferHasIdentifier(fb))
    return bad("missing the ETLM file identifier");
  if (!fbs::VerifyProgramBuffer(verifier))
    return bad("the flatbuffer failed verification");
  const fbs::Program *prog = fbs::GetProgram(fb);
  // The Verifier checks scalars' alignment but a vector's only for its
  // 4-byte length: a file can place the elements of a [long], [ulong] or
  // [double] at 4 mod 8, and every read of them would be a misaligned load
  // (undefined behaviour; found by the pte fuzzer). The flatbuffer starts
  // 8-aligned (a mapped file or an owned copy, at an offset % 8 == 0), so
  // the elements' addresses are checked.
  if (const char *v = misalignedVector(*prog))
    return bad(std::string("the flatbuffer's ") + v +
               " vector is not 8-byte aligned");
  p->fb_ = prog;
  p->segmentBase_ = p->data_ + h.segmentBase;

  // Segments.
  uint32_t numSegments = prog->segments() ? prog->segments()->size() : 0;
  for (uint32_t i = 0; i < numSegments; ++i) {
    const fbs::Segment *s = prog->segments()->Get(i);
    if (!s || !inRange(s->offset(), s->size(), h.segmentDataSize) ||
        s->offset() % h.segmentAlignment)
      return bad("segment " + std::to_string(i) +
                 " lies outside the segment data or is misaligned");
  }
  // Constants.
  uint32_t numConstants = prog->constants() ? prog->constants()->size() : 0;
  for (uint32_t i = 0; i < numConstants; ++i) {
    const fbs::Constant *c = prog->constants()->Get(i);
    if (c->segment() >= numSegments ||
        !inRange(c->offset(), c->size(),
                 prog->segments()->Get(c->segment())->size()))
      return bad("constant '" + c->name()->str() +
                 "' points outside its segment");
    if (c->offset() % 16)
      return bad("constant '" + c->name()->str() + "' is misaligned");
  }
  // Buffers.
  uint32_t numBuffers = prog->buffers() ? prog->buffers()->size() : 0;
  for (uint32_t i = 0; i < numBuffers; ++i) {
    const fbs::Buffer *b = prog->buffers()->Get(i);
    std::string what = "buffer '" + b->name()->str() + "'";
    if (!validDType(b->dtype()) || b->dtype() == fbs::DType::QWEIGHT ||
        b->dtype() == fbs::DType::QACT)
      return bad(what + " has an invalid dtype");
    if (!b->sizes() || b->sizes()->size() > kMaxRank)
      return bad(what + " has an invalid rank");
    std::vector<int64_t> sizes(b->sizes()->begin(), b->sizes()->end());
    Result<size_t> bytes = storageBytes(static_cast<DType>(b->dtype()),
                                        sizes.data(), sizes.size(), {});
    if (!bytes.ok() || *bytes != b->nbytes() || *bytes > (size_t(1) << 40))
      return bad(what + " has an inconsistent size");
  }
  // Delegates.
  uint32_t numDelegates = prog->delegates() ? prog->delegates()->size() : 0;
  for (uint32_t i = 0; i < numDelegates; ++i)
    if (prog->delegates()->Get(i)->segment() >= numSegments)
      return bad("delegate " + std::to_string(i) +
                 " refers to a missing segment");

  // Methods.
  if (!prog->methods() || prog->methods()->size() == 0)
    return bad("the program has no methods");
  for (const fbs::Method *m : *prog->methods()) {
    std::string mname = m->name()->str();
    uint32_t numValues = m->values() ? m->values()->size() : 0;
    uint32_t numArenas = m->arena_sizes() ? m->arena_sizes()->size() : 0;
    for (uint32_t a = 0; a < numArenas; ++a)
      if (m->arena_sizes()->Get(a) > (uint64_t(1) << 40))
        return bad("method '" + mname + "': arena " + std::to_string(a) +
                   " is larger than 1 TiB");
    std::vector<uint8_t> writable(numValues, 0);
    for (uint32_t v = 0; v < numValues; ++v) {
      const fbs::Tensor *t = m->values()->Get(v);
      std::string what = "method '" + mname + "' value " + std::to_string(v) +
                         (t->name() ? " (" + t->name()->str() + ")" : "");
      if (!validDType(t->dtype()))
        return bad(what + ": invalid dtype " +
                   std::to_string(unsigned(t->dtype())));
      uint32_t rank = t->sizes() ? t->sizes()->size() : 0;
      if (rank > kMaxRank)
        return bad(what + ": rank " + std::to_string(rank) + " > " +
                   std::to_string(kMaxRank));
      if (t->dynamic_dims() && t->dynamic_dims()->size() != rank)
        return bad(what + ": dynamic_dims has the wrong length");
      std::vector<int64_t> sizes;
      if (rank)
        sizes.assign(t->sizes()->begin(), t->sizes()->end());
      QuantInfo q = quantOf(t);
      DType dt = static_cast<DType>(t->dtype());
      if (dt == DType::QWeight || dt == DType::QAct) {
        if (!t->quant() || (q.bits != 4 && q.bits != 8) ||
            (q.scaleType != DType::F32 && q.scaleType != DType::F16))
          return bad(what + ": invalid quantization parameters");
        if (dt == DType::QAct && q.groupSize != 0 && h.version < 2)
          return bad(what +
                     ": a per-block quantized activation needs format "
                     "version 2, the file says " +
                     std::to_string(h.version));
      }
      Result<size_t> bytes = storageBytes(dt, sizes.data(), rank, q);
      if (!bytes.ok())
        return bad(what + ": " + bytes.message());
      if (t->capacity() < *bytes)
        return bad(what + ": capacity " + std::to_string(t->capacity()) +
                   " is smaller than its " + std::to_string(*bytes) + " bytes");
      switch (t->storage()) {
      case fbs::StorageKind::PLANNED:
        if (t->arena() >= numArenas ||
            !inRange(t->offset(), t->capacity(),
                     m->arena_sizes()->Get(t->arena())) ||
            t->offset() % 16)
          return bad(what + ": planned range [" + std::to_string(t->offset()) +
                     ", +" + std::to_string(t->capacity()) +
                     ") is outside arena " + std::to_string(t->arena()));
        writable[v] = 1;
        break;
      case fbs::StorageKind::CONSTANT: {
        if (t->constant() >= numConstants)
          return bad(what + ": constant index out of range");
        const fbs::Constant *c = prog->constants()->Get(t->constant());
        if (c->size() < t->capacity())
          return bad(what + ": constant '" + c->name()->str() + "' holds " +
                     std::to_string(c->size()) + " bytes, needs " +
                     std::to_string(t->capacity()));
        break;
      }
      case fbs::StorageKind::BUFFER: {
        if (t->buffer() >= numBuffers)
          return bad(what + ": buffer index out of range");
        const fbs::Buffer *b = prog->buffers()->Get(t->buffer());
        if (b->nbytes() < t->capacity() ||
            static_cast<uint8_t>(b->dtype()) != static_cast<uint8_t>(dt))
          return bad(what + ": does not fit buffer '" + b->name()->str() + "'");
        writable[v] = 1;
        break;
      }
      case fbs::StorageKind::ALIAS: {
        if (t->alias_of() >= v)
          return bad(what + ": aliases a later value");
        const fbs::Tensor *root = m->values()->Get(t->alias_of());
        if (root->capacity() < t->capacity())
          return bad(what + ": is larger than the value it aliases");
        writable[v] = writable[t->alias_of()];
        break;
      }
      default:
        return bad(what + ": unknown storage kind");
      }
    }
    auto checkIndices = [&](const flatbuffers::Vector<uint32_t> *idx,
                            const std::string &what, bool mustWrite) -> Status {
      if (!idx)
        return Status();
      for (uint32_t i : *idx) {
        if (i >= numValues)
          return bad("method '" + mname + "': " + what + " refers to value " +
                     std::to_string(i) + " of " + std::to_string(numValues));
        if (mustWrite && !writable[i])
          return bad("method '" + mname + "': " + what + " writes value " +
                     std::to_string(i) + ", which is read-only");
      }
      return Status();
    };
    ETLLM_RETURN_IF_ERROR(checkIndices(m->inputs(), "an input", true));
    ETLLM_RETURN_IF_ERROR(checkIndices(m->outputs(), "an output", false));
    if (m->inputs())
      for (uint32_t i : *m->inputs())
        if (m->values()->Get(i)->storage() != fbs::StorageKind::PLANNED)
          return bad("method '" + mname + "': input value " +
                     std::to_string(i) + " is not planned memory");
    uint32_t numInstrs = m->instructions() ? m->instructions()->size() : 0;
    for (uint32_t k = 0; k < numInstrs; ++k) {
      const fbs::InstructionEntry *e = m->instructions()->Get(k);
      std::string what = "instruction " + std::to_string(k);
      if (const fbs::KernelCall *kc = e->instruction_as_KernelCall()) {
        const OpInfo *op = findOp(kc->op()->c_str(), kc->op()->size());
        if (!op)
          return bad(what + ": unknown operator '" + kc->op()->str() + "'");
        what += " (" + std::string(op->name) + ")";
        uint32_t nin = kc->inputs() ? kc->inputs()->size() : 0;
        uint32_t nout = kc->outputs() ? kc->outputs()->size() : 0;
        uint32_t nints = kc->ints() ? kc->ints()->size() : 0;
        uint32_t nfloats = kc->floats() ? kc->floats()->size() : 0;
        if (int(nin) < op->minInputs ||
            (op->maxInputs >= 0 && int(nin) > op->maxInputs))
          return bad(what + ": " + std::to_string(nin) + " inputs");
        if (op->outputs >= 0 ? int(nout) != op->outputs : nout < 1)
          return bad(what + ": " + std::to_string(nout) + " outputs");
        if (op->numInts >= 0 ? int(nints) != op->numInts : false)
          return bad(what + ": " + std::to_string(nints) +
                     " integer attributes");
        if (int(nfloats) != op->numFloats)
          return bad(what + ": " + std::to_string(nfloats) +
                     " float attributes");
        Status attrs = checkIntAttrs(
            op->id, nin, {nints ? kc->ints()->data() : nullptr, nints});
        if (!attrs.ok())
          return bad(what + ": " + attrs.message());
        ETLLM_RETURN_IF_ERROR(checkIndices(kc->inputs(), what, false));
        ETLLM_RETURN_IF_ERROR(checkIndices(kc->outputs(), what, true));
        // The operator's contract (attributes, dtypes, ranks), now rather
        // than when the instruction runs.
        auto describe = [&](const flatbuffers::Vector<uint32_t> *idx) {
          std::vector<ValueDesc> d;
          if (idx)
            for (uint32_t i : *idx) {
              const fbs::Tensor *t = m->values()->Get(i);
              d.push_back({static_cast<DType>(t->dtype()),
                           int(t->sizes() ? t->sizes()->size() : 0)});
            }
          return d;
        };
        std::vector<int64_t> ints;
        std::vector<double> floats;
        if (kc->ints())
          ints.assign(kc->ints()->begin(), kc->ints()->end());
        if (kc->floats())
          floats.assign(kc->floats()->begin(), kc->floats()->end());
        Status contract = verifyKernelCall(
            *op, describe(kc->inputs()), describe(kc->outputs()), ints.data(),
            ints.size(), floats.data(), floats.size());
        if (!contract.ok())
          return bad("method '" + mname + "', " + what + ": " +
                     contract.message());
      } else if (const fbs::DelegateCall *dc =
                     e->instruction_as_DelegateCall()) {
        if (dc->delegate() >= numDelegates)
          return bad(what + ": delegate index out of range");
        ETLLM_RETURN_IF_ERROR(checkIndices(dc->inputs(), what, false));
        ETLLM_RETURN_IF_ERROR(checkIndices(dc->outputs(), what, true));
      } else {
        return bad(what + ": unknown instruction kind");
      }
    }
  }

  // Planned memory (saturating: every term is bounded above, the sum of
  // many could still wrap).
  auto add = [](uint64_t &acc, uint64_t v) {
    if (addOverflows(acc, v, acc))
      acc = UINT64_MAX;
  };
  for (const fbs::Method *m : *prog->methods())
    if (m->arena_sizes())
      for (uint64_t a : *m->arena_sizes())
        add(p->planned_.arenas, a);
  for (uint32_t i = 0; i < numBuffers; ++i)
    add(p->planned_.buffers, prog->buffers()->Get(i)->nbytes());
  if (!p->file_)
    p->planned_.constants = p->size_;

  // Metadata.
  ProgramMetadata &md = p->metadata_;
  if (const fbs::Metadata *m = prog->metadata()) {
    md.modelConfigJson = str(m->model_config_json());
    md.vocabSize = m->vocab_size();
    md.maxSeqLen = m->max_seq_len();
    md.bosId = m->bos_id();
    if (m->eos_ids())
      md.eosIds.assign(m->eos_ids()->begin(), m->eos_ids()->end());
    if (const fbs::TokenizerInfo *t = m->tokenizer()) {
      TokenizerMetadata &tm = md.tokenizer;
      tm.kind = str(t->kind());
      if (t->file_segment() >= 0) {
        if (uint32_t(t->file_segment()) >= numSegments)
          return bad("the tokenizer refers to a missing segment");
        tm.fileData = p->segmentData(t->file_segment());
        tm.fileSize = p->segmentSize(t->file_segment());
      }
      tm.fileName = str(t->file_name());
      tm.pre = str(t->pre());
      if (t->tokens())
        for (const flatbuffers::String *s : *t->tokens())
          tm.tokens.push_back(str(s));
      if (t->merges())
        for (const flatbuffers::String *s : *t->merges())
          tm.merges.push_back(str(s));
      if (t->scores())
        tm.scores.assign(t->scores()->begin(), t->scores()->end());
      if (t->token_types())
        tm.tokenTypes.assign(t->token_types()->begin(),
                             t->token_types()->end());
      tm.bosId = t->bos_id();
      tm.eosId = t->eos_id();
      tm.unkId = t->unk_id();
      tm.padId = t->pad_id();
      tm.eotId = t->eot_id();
      tm.addBos = t->add_bos();
      tm.addSpacePrefix = t->add_space_prefix();
    }
    if (const fbs::Provenance *pv = m->provenance()) {
      md.etllmVersion = str(pv->etllm_version());
      md.pipeline = str(pv->pipeline());
      md.configYaml = str(pv->config_yaml());
      if (pv->stages())
        for (const flatbuffers::String *s : *pv->stages())
          md.stages.push_back(str(s));
      if (pv->inputs())
        for (const fbs::KeyValue *kv : *pv->inputs())
          md.inputs.push_back({str(kv->key()), str(kv->value())});
    }
    if (const fbs::ChatTemplateInfo *c = m->chat()) {
      md.chat.source = str(c->source());
      md.chat.bosToken = str(c->bos_token());
      md.chat.eosToken = str(c->eos_token());
      if (c->stop_strings())
        for (const flatbuffers::String *s : *c->stop_strings())
          md.chat.stopStrings.push_back(str(s));
    }
  }

  // LoRA hooks: names distinct, features in range, the hash segment
  // 32 bytes; every lora kernel call names a hook.
  if (const fbs::LoraHooks *l = prog->lora()) {
    constexpr int64_t kMaxFeatures = int64_t(1) << 24;
    if (l->max_rank() < 1 || l->max_rank() > kMaxLoraRank)
      return bad("LoRA max_rank " + std::to_string(l->max_rank()) +
                 " is outside 1.." + std::to_string(kMaxLoraRank));
    p->loraMaxRank_ = l->max_rank();
    uint32_t n = l->hooks() ? l->hooks()->size() : 0;
    if (n == 0)
      return bad("the LoRA hook table is empty");
    std::set<std::string> names;
    for (uint32_t i = 0; i < n; ++i) {
      const fbs::LoraHook *hk = l->hooks()->Get(i);
      LoraHookInfo info{hk->name()->str(), hk->in_features(),
                        hk->out_features()};
      std::string what =
          "LoRA hook " + std::to_string(i) + " ('" + info.name + "')";
      if (info.name.empty() || !names.insert(info.name).second)
        return bad(what + ": empty or repeated name");
      if (info.inFeatures < 1 || info.inFeatures > kMaxFeatures ||
          info.outFeatures < 1 || info.outFeatures > kMaxFeatures)
        return bad(what + ": features [" + std::to_string(info.outFeatures) +
                   ", " + std::to_string(info.inFeatures) + "] out of range");
      p->loraHooks_.push_back(std::move(info));
    }
    int32_t seg = l->hash_segment();
    if (seg < 0 || uint32_t(seg) >= numSegments ||
        p->segmentSize(uint32_t(seg)) != 32)
      return bad("the LoRA hash segment " + std::to_string(seg) +
                 " is missing or not 32 bytes");
    static const char *kHex = "0123456789abcdef";
    const uint8_t *d = p->segmentData(uint32_t(seg));
    for (int i = 0; i < 32; ++i) {
      p->contentHash_ += kHex[d[i] >> 4];
      p->contentHash_ += kHex[d[i] & 15];
    }
  }
  for (const fbs::Method *m : *prog->methods()) {
    uint32_t numInstrs = m->instructions() ? m->instructions()->size() : 0;
    for (uint32_t k = 0; k < numInstrs; ++k) {
      const fbs::KernelCall *kc =
          m->instructions()->Get(k)->instruction_as_KernelCall();
      if (kc && kc->op()->str() == opInfo(OpId::Lora).name &&
          uint64_t(kc->ints()->Get(0)) >= p->loraHooks_.size())
        return bad("instruction " + std::to_string(k) + " (lora): hook " +
                   std::to_string(kc->ints()->Get(0)) + " of " +
                   std::to_string(p->loraHooks_.size()));
    }
  }
  return p;
}

uint64_t Program::PlannedMemory::total() const {
  uint64_t t = arenas;
  if (addOverflows(t, buffers, t) || addOverflows(t, constants, t))
    return UINT64_MAX;
  return t;
}

uint64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0)
    return uint64_t(1) << 62;
  return uint64_t(pages) * uint64_t(page);
}

std::vector<std::string> Program::methodNames() const {
  std::vector<std::string> names;
  for (const fbs::Method *m : *fb_->methods())
    names.push_back(m->name()->str());
  return names;
}

const uint8_t *Program::segmentData(uint32_t index) const {
  return segmentBase_ + fb_->segments()->Get(index)->offset();
}
size_t Program::segmentSize(uint32_t index) const {
  return fb_->segments()->Get(index)->size();
}

//===----------------------------------------------------------------------===//
// Module and Method
//===----------------------------------------------------------------------===//

static uint8_t *alignedAlloc(std::unique_ptr<uint8_t[]> &owner, size_t size) {
  owner.reset(new (std::nothrow) uint8_t[size + 64]());
  if (!owner)
    return nullptr;
  uintptr_t p = reinterpret_cast<uintptr_t>(owner.get());
  return reinterpret_cast<uint8_t *>((p + 63) & ~uintptr_t(63));
}

Result<std::unique_ptr<Module>> Module::create(std::shared_ptr<Program> program,
                                               const ModuleOptions &options) {
  if (options.numThreads > size_t(INT64_MAX))
    return Error("threads: " + std::to_string(options.numThreads) +
                 " is out of range");
  ETLLM_RETURN_IF_ERROR(checkThreads("threads", int64_t(options.numThreads)));
  // The memory budget, before any allocation.
  const Program::PlannedMemory &plan = program->plannedMemory();
  uint64_t limit =
      options.maxMemory ? options.maxMemory : physicalMemoryBytes();
  if (plan.total() > limit) {
    auto mib = [](uint64_t b) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / 1048576.0);
      return std::string(buf);
    };
    return Error(
        program->name() + ": the program plans " +
        std::to_string(plan.total()) + " bytes (" + mib(plan.total()) +
        ": arenas " + std::to_string(plan.arenas) + ", mutable buffers " +
        std::to_string(plan.buffers) + ", constants in memory " +
        std::to_string(plan.constants) + "), more than the memory limit of " +
        std::to_string(limit) + " bytes (" + mib(limit) +
        (options.maxMemory ? ")" : ", the machine's physical memory)"));
  }
  // What the delegates may still allocate in init (their arenas, converted
  // weights, reserved scratch): they reserve it before allocating.
  MemoryBudget budget(limit, plan.total());
  std::unique_ptr<Module> mod(new Module());
  mod->program_ = program;
  if (options.numThreads > 1)
    mod->pool_ = pthreadpool_create(options.numThreads);
  mod->ctx_ = std::make_unique<ExecContext>(mod->pool_);
  const fbs::Program &fb = program->schema();
  const KernelTable &kernels =
      options.kernels ? *options.kernels : portableKernels();

  // Mutable buffers, zeroed.
  std::vector<uint8_t *> bufferPtrs;
  if (fb.buffers())
    for (const fbs::Buffer *b : *fb.buffers()) {
      mod->buffers_.emplace_back();
      uint8_t *p = alignedAlloc(mod->buffers_.back(), b->nbytes());
      if (!p)
        return Error(program->name() + ": cannot allocate " +
                     std::to_string(b->nbytes()) + " bytes for buffer '" +
                     b->name()->str() + "'");
      bufferPtrs.push_back(p);
      mod->bufferSizes_.push_back(b->nbytes());
    }

  // Delegates.
  // Records which constants each delegate asks for (Module::
  // delegateConstants: what a call of that delegate reads).
  struct ProgramConstants : ConstantTable {
    const Program &p;
    mutable std::vector<uint32_t> requested;
    mutable std::vector<std::pair<uint32_t, uint64_t>> gathered;
    explicit ProgramConstants(const Program &p) : p(p) {}
    size_t size() const override {
      return p.schema().constants() ? p.schema().constants()->size() : 0;
    }
    Result<std::pair<const uint8_t *, size_t>>
    get(uint32_t index) const override {
      if (index >= size())
        return Error("constant index " + std::to_string(index) +
                     " is out of range");
      const fbs::Constant *c = p.schema().constants()->Get(index);
      if (std::find(requested.begin(), requested.end(), index) ==
          requested.end())
        requested.push_back(index);
      return std::make_pair(p.segmentData(c->segment()) + c->offset(),
                            size_t(c->size()));
    }
    void noteGatherTable(uint32_t index, uint64_t rows) const override {
      // Only for constants the delegate asked for, with at least one row.
      if (rows == 0 || std::find(requested.begin(), requested.end(), index) ==
                           requested.end())
        return;
      for (auto &g : gathered)
        if (g.first == index)
          return;
      gathered.push_back({index, rows});
    }
  } constants(*program);
  if (fb.delegates())
    for (const fbs::Delegate *d : *fb.delegates()) {
      Backend *backend = findBackend(d->backend()->str());
      if (!backend)
        return Error(program->name() + ": the program needs backend '" +
                     d->backend()->str() +
                     "', which this runtime does not have");
      std::vector<std::pair<std::string, std::string>> specs;
      if (d->compile_specs())
        for (const fbs::KeyValue *kv : *d->compile_specs())
          specs.push_back({str(kv->key()), str(kv->value())});
      constants.requested.clear();
      constants.gathered.clear();
      auto inst = backend->init(program->segmentData(d->segment()),
                                program->segmentSize(d->segment()), specs,
                                constants, *mod->ctx_, budget);
      if (!inst.ok())
        return Error(program->name() + ": backend '" + d->backend()->str() +
                     "': " + inst.message());
      mod->delegates_.push_back(std::move(inst.value()));
      std::sort(constants.requested.begin(), constants.requested.end());
      mod->delegateConstants_.push_back(std::move(constants.requested));
      std::sort(constants.gathered.begin(), constants.gathered.end());
      mod->delegateGathers_.push_back(std::move(constants.gathered));
    }

  for (const fbs::Method *m : *fb.methods()) {
    std::unique_ptr<Method> method(new Method());
    method->name_ = m->name()->str();
    method->module_ = mod.get();
    std::vector<uint8_t *> arenaPtrs;
    if (m->arena_sizes())
      for (uint64_t size : *m->arena_sizes()) {
        method->arenas_.emplace_back();
        uint8_t *p = alignedAlloc(method->arenas_.back(), size);
        if (!p)
          return Error(program->name() + ": cannot allocate an arena of " +
                       std::to_string(size) + " bytes");
        arenaPtrs.push_back(p);
        method->arenaSizes_.push_back(size);
      }
    uint32_t numValues = m->values() ? m->values()->size() : 0;
    method->values_.resize(numValues);
    for (uint32_t v = 0; v < numValues; ++v) {
      const fbs::Tensor *t = m->values()->Get(v);
      Tensor &x = method->values_[v];
      x.dtype = static_cast<DType>(t->dtype());
      x.rank = t->sizes() ? t->sizes()->size() : 0;
      for (int i = 0; i < x.rank; ++i)
        x.sizes[i] = t->sizes()->Get(i);
      x.capacity = t->capacity();
      x.quant = quantOf(t);
      switch (t->storage()) {
      case fbs::StorageKind::PLANNED:
        x.data = arenaPtrs[t->arena()] + t->offset();
        break;
      case fbs::StorageKind::CONSTANT: {
        const fbs::Constant *c = fb.constants()->Get(t->constant());
        // Constants are never written: the verifier rejects any instruction
        // output that resolves to one.
        x.data = const_cast<uint8_t *>(program->segmentData(c->segment()) +
                                       c->offset());
        break;
      }
      case fbs::StorageKind::BUFFER:
        x.data = bufferPtrs[t->buffer()];
        break;
      case fbs::StorageKind::ALIAS:
        x.data = method->values_[t->alias_of()].data;
        break;
      }
    }
    if (m->inputs())
      for (uint32_t i : *m->inputs())
        method->inputs_.push_back(&method->values_[i]);
    if (m->outputs())
      for (uint32_t i : *m->outputs())
        method->outputs_.push_back(&method->values_[i]);
    if (m->instructions())
      for (const fbs::InstructionEntry *e : *m->instructions()) {
        Method::Instr in;
        auto collect = [&](const flatbuffers::Vector<uint32_t> *idx,
                           std::vector<Tensor *> &out) {
          if (idx)
            for (uint32_t i : *idx)
              out.push_back(&method->values_[i]);
        };
        if (const fbs::KernelCall *kc = e->instruction_as_KernelCall()) {
          const OpInfo *op = findOp(kc->op()->c_str(), kc->op()->size());
          in.op = op->id;
          in.fn = kernels.get(op->id);
          if (!in.fn)
            in.fn = portableKernels().get(op->id);
          if (!in.fn)
            return Error(program->name() + ": no kernel for operator '" +
                         std::string(op->name) + "'");
          collect(kc->inputs(), in.inputs);
          collect(kc->outputs(), in.outputs);
          if (kc->ints())
            in.ints.assign(kc->ints()->begin(), kc->ints()->end());
          if (kc->floats())
            in.floats.assign(kc->floats()->begin(), kc->floats()->end());
        } else {
          const fbs::DelegateCall *dc = e->instruction_as_DelegateCall();
          in.delegate = int(dc->delegate());
          collect(dc->inputs(), in.inputs);
          collect(dc->outputs(), in.outputs);
        }
        method->instrs_.push_back(std::move(in));
      }
    mod->methods_.push_back(std::move(method));
  }
  return mod;
}

Module::~Module() {
  methods_.clear();
  delegates_.clear();
  ctx_.reset();
  if (pool_)
    pthreadpool_destroy(pool_);
}

Result<Method *> Module::method(const std::string &name) {
  std::string names;
  for (auto &m : methods_) {
    if (m->name() == name)
      return m.get();
    names += (names.empty() ? "" : ", ") + m->name();
  }
  return Error(program_->name() + ": no method '" + name +
               "' (it has: " + names + ")");
}

void Module::resetState() {
  for (size_t i = 0; i < buffers_.size(); ++i) {
    uintptr_t p = reinterpret_cast<uintptr_t>(buffers_[i].get());
    std::memset(reinterpret_cast<void *>((p + 63) & ~uintptr_t(63)), 0,
                bufferSizes_[i]);
  }
}

const std::vector<uint32_t> &Module::delegateConstants(size_t i) const {
  static const std::vector<uint32_t> none;
  return i < delegateConstants_.size() ? delegateConstants_[i] : none;
}

const std::vector<std::pair<uint32_t, uint64_t>> &
Module::delegateGatherTables(size_t i) const {
  static const std::vector<std::pair<uint32_t, uint64_t>> none;
  return i < delegateGathers_.size() ? delegateGathers_[i] : none;
}

std::string Module::delegateBackend(size_t i) const {
  const fbs::Program &fb = program_->schema();
  if (!fb.delegates() || i >= fb.delegates()->size())
    return "";
  return fb.delegates()->Get(uint32_t(i))->backend()->str();
}

std::vector<std::pair<std::string, uint64_t>>
Module::delegateCounters(size_t i) const {
  if (i >= delegates_.size())
    return {};
  return delegates_[i]->counters();
}

size_t Module::bufferBytes() const {
  size_t n = 0;
  for (size_t s : bufferSizes_)
    n += s;
  return n;
}

Method::~Method() = default;

size_t Method::plannedBytes() const {
  size_t n = 0;
  for (size_t s : arenaSizes_)
    n += s;
  return n;
}

Status Method::setInput(size_t i, DType dtype, const int64_t *sizes, int rank,
                        const void *data) {
  if (i >= inputs_.size())
    return Error("method '" + name_ + "' has " +
                 std::to_string(inputs_.size()) + " inputs, not " +
                 std::to_string(i + 1));
  Tensor &t = *inputs_[i];
  if (dtype != t.dtype)
    return Error("input " + std::to_string(i) + " of '" + name_ + "' is " +
                 dtypeName(t.dtype) + ", got " + dtypeName(dtype));
  if (rank != t.rank)
    return Error("input " + std::to_string(i) + " of '" + name_ +
                 "' has rank " + std::to_string(t.rank) + ", got " +
                 std::to_string(rank));
  ETLLM_RETURN_IF_ERROR(t.resize(sizes, rank));
  std::memcpy(t.data, data, t.nbytes());
  return Status();
}

Status Method::execute() {
  ExecContext &ctx = *module_->ctx_;
  OpProfile *profile = ctx.profile();
  const int64_t start = profile ? profileNowNs() : 0;
  for (size_t k = 0; k < instrs_.size(); ++k) {
    Instr &in = instrs_[k];
    KernelArgs args;
    args.inputs = {in.inputs.data(), in.inputs.size()};
    args.outputs = {in.outputs.data(), in.outputs.size()};
    args.ints = {in.ints.data(), in.ints.size()};
    args.floats = {in.floats.data(), in.floats.size()};
    args.ctx = &ctx;
    const int64_t t0 = profile ? profileNowNs() : 0;
    Status st = in.delegate >= 0 ? module_->delegates_[in.delegate]->execute(
                                       args.inputs, args.outputs, ctx)
                                 : in.fn(args);
    if (profile) {
      const int64_t ns = profileNowNs() - t0;
      if (in.delegate >= 0)
        profile->addDelegateCall(ns);
      else
        profile->add(OpProfile::Where::Portable, in.op, ns);
    }
    if (!st.ok())
      return Error("method '" + name_ + "', instruction " + std::to_string(k) +
                   " (" +
                   (in.delegate >= 0 ? std::string("delegate")
                                     : std::string(opInfo(in.op).name)) +
                   "): " + st.message());
  }
  if (profile)
    profile->addExecute(profileNowNs() - start);
  return Status();
}

} // namespace etllm::rt
