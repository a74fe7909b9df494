//===- program_validation.cpp - The semantic checks of a program file -----===//
//
// The flatbuffers Verifier (program.cpp) proves that the tables lie inside
// the buffer; nothing more. Every index, offset, size, dtype, shape product
// and arena bound a program file states is checked here, before a Module
// reads any of them (ExecuTorch keeps these checks apart the same way, in
// program_validation.cpp): what passes may be used without further checks.
//
//===----------------------------------------------------------------------===//
#include "program_internal.h"

#include "etllm/runtime/kv_cache_quant.h"
#include "etllm/runtime/verify_ops.h"

#include <set>
#include <vector>

namespace etllm::rt::detail {
namespace {

// One code per dtype: program.fbs's DType, the runtime's DType and the
// backends' blobs (which store rt::DType codes as ubyte) must agree.
#define ETLLM_PIN_DTYPE(Fbs, Rt)                                               \
  static_assert(static_cast<int>(fbs::DType::Fbs) ==                           \
                    static_cast<int>(DType::Rt),                               \
                "program.fbs DType::" #Fbs " != rt::DType::" #Rt)
ETLLM_PIN_DTYPE(F32, F32);
ETLLM_PIN_DTYPE(F16, F16);
ETLLM_PIN_DTYPE(BF16, BF16);
ETLLM_PIN_DTYPE(I64, I64);
ETLLM_PIN_DTYPE(I32, I32);
ETLLM_PIN_DTYPE(I8, I8);
ETLLM_PIN_DTYPE(U8, U8);
ETLLM_PIN_DTYPE(BOOL, Bool);
ETLLM_PIN_DTYPE(QWEIGHT, QWeight);
ETLLM_PIN_DTYPE(QACT, QAct);
#undef ETLLM_PIN_DTYPE
static_assert(static_cast<int>(fbs::DType::MAX) + 1 == kNumDTypes,
              "program.fbs and rt::DType have different dtype counts");

bool validDType(fbs::DType t) {
  return static_cast<unsigned>(t) < static_cast<unsigned>(kNumDTypes);
}

bool sameQuant(const QuantInfo &a, const QuantInfo &b) {
  return a.bits == b.bits && a.symmetric == b.symmetric &&
         a.scaleType == b.scaleType && a.groupSize == b.groupSize &&
         a.perToken == b.perToken && a.scheme == b.scheme;
}

using Indices = flatbuffers::Vector<uint32_t>;

class Validator {
public:
  Validator(const fbs::Program &prog, const FileHeader &h,
            const std::string &name)
      : prog_(prog), h_(h), name_(name),
        numSegments_(prog.segments() ? prog.segments()->size() : 0),
        numConstants_(prog.constants() ? prog.constants()->size() : 0),
        numBuffers_(prog.buffers() ? prog.buffers()->size() : 0),
        numDelegates_(prog.delegates() ? prog.delegates()->size() : 0) {}

  Status run() {
    ETLLM_RETURN_IF_ERROR(segments());
    ETLLM_RETURN_IF_ERROR(constants());
    ETLLM_RETURN_IF_ERROR(buffers());
    ETLLM_RETURN_IF_ERROR(delegates());
    if (!prog_.methods() || prog_.methods()->size() == 0)
      return bad("the program has no methods");
    for (const fbs::Method *m : *prog_.methods())
      ETLLM_RETURN_IF_ERROR(method(*m));
    ETLLM_RETURN_IF_ERROR(tokenizer());
    ETLLM_RETURN_IF_ERROR(kvRing());
    uint32_t numHooks = 0;
    ETLLM_RETURN_IF_ERROR(loraHooks(numHooks));
    return loraCalls(numHooks);
  }

private:
  const fbs::Program &prog_;
  const FileHeader &h_;
  const std::string &name_;
  const uint32_t numSegments_, numConstants_, numBuffers_, numDelegates_;

  Error bad(const std::string &what) const {
    return invalidProgram(name_, what);
  }

  Status segments() const {
    for (uint32_t i = 0; i < numSegments_; ++i) {
      const fbs::Segment *s = prog_.segments()->Get(i);
      if (!s || !inRange(s->offset(), s->size(), h_.segmentDataSize) ||
          s->offset() % h_.segmentAlignment)
        return bad("segment " + std::to_string(i) +
                   " lies outside the segment data or is misaligned");
    }
    return Status();
  }

  Status constants() const {
    for (uint32_t i = 0; i < numConstants_; ++i) {
      const fbs::Constant *c = prog_.constants()->Get(i);
      if (c->segment() >= numSegments_ ||
          !inRange(c->offset(), c->size(),
                   prog_.segments()->Get(c->segment())->size()))
        return bad("constant '" + c->name()->str() +
                   "' points outside its segment");
      if (c->offset() % 16)
        return bad("constant '" + c->name()->str() + "' is misaligned");
    }
    return Status();
  }

  /// A QACT buffer is an int8 KV cache [B, Hkv, T, D] (kv_cache_quant.h):
  /// exactly that quantization, every size positive.
  Status int8KvCacheBuffer(const fbs::Buffer &b, const std::string &what,
                           const std::vector<int64_t> &sizes) const {
    if (!b.quant())
      return bad(what + ": a QACT buffer needs quantization parameters");
    if (!isInt8KvCacheQuant(quantOf(&b)))
      return bad(what + ": a QACT buffer must be an int8 KV cache (8 bits, "
                        "symmetric, f32 scales, group size 0, per token)");
    if (sizes.size() != 4)
      return bad(what + ": a QACT buffer must have rank 4 [B, Hkv, T, D], " +
                 "not " + std::to_string(sizes.size()));
    for (int64_t s : sizes)
      if (s <= 0)
        return bad(what + ": a QACT buffer has a size " + std::to_string(s) +
                   " <= 0");
    return Status();
  }

  Status buffers() const {
    for (uint32_t i = 0; i < numBuffers_; ++i) {
      const fbs::Buffer *b = prog_.buffers()->Get(i);
      std::string what = "buffer '" + b->name()->str() + "'";
      if (!validDType(b->dtype()) || b->dtype() == fbs::DType::QWEIGHT)
        return bad(what + " has an invalid dtype");
      if (!b->sizes() || b->sizes()->size() > kMaxRank)
        return bad(what + " has an invalid rank");
      std::vector<int64_t> sizes(b->sizes()->begin(), b->sizes()->end());
      const DType dt = static_cast<DType>(b->dtype());
      if (dt == DType::QAct)
        ETLLM_RETURN_IF_ERROR(int8KvCacheBuffer(*b, what, sizes));
      else if (b->quant())
        return bad(what + ": quantization parameters on a " + dtypeName(dt) +
                   " buffer (only a QACT buffer has them)");
      // storageBytes checks the element count for overflow (and QActLayout's
      // sections of a QACT buffer).
      Result<size_t> bytes =
          storageBytes(dt, sizes.data(), int(sizes.size()), quantOf(b));
      if (!bytes.ok())
        return bad(what + " has an inconsistent size: " + bytes.message());
      if (*bytes != b->nbytes())
        return bad(what +
                   " has an inconsistent size: " + std::to_string(b->nbytes()) +
                   " bytes, its shape needs " + std::to_string(*bytes));
      if (*bytes > (size_t(1) << 40))
        return bad(what + " is larger than 1 TiB");
    }
    return Status();
  }

  Status delegates() const {
    for (uint32_t i = 0; i < numDelegates_; ++i)
      if (prog_.delegates()->Get(i)->segment() >= numSegments_)
        return bad("delegate " + std::to_string(i) +
                   " refers to a missing segment");
    return Status();
  }

  /// Value `v` of method `m`; sets writable[v] (planned memory, a buffer,
  /// or an alias of a writable value).
  Status value(const fbs::Method &m, uint32_t v,
               std::vector<uint8_t> &writable) const {
    const std::string mname = m.name()->str();
    uint32_t numArenas = m.arena_sizes() ? m.arena_sizes()->size() : 0;
    const fbs::Tensor *t = m.values()->Get(v);
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
      const bool ggml = q.scheme != QScheme::Affine;
      if (!t->quant() || (!ggml && q.bits != 4 && q.bits != 8) ||
          (q.scaleType != DType::F32 && q.scaleType != DType::F16) ||
          (ggml && dt == DType::QAct))
        return bad(what + ": invalid quantization parameters");
      if (ggml && h_.version < 3)
        return bad(what + ": a weight of scheme " +
                   (unsigned(q.scheme) < kNumQSchemes
                        ? std::string(qschemeName(q.scheme))
                        : std::to_string(unsigned(q.scheme))) +
                   " needs format version 3, the file says " +
                   std::to_string(h_.version));
      if (dt == DType::QAct && q.groupSize != 0 && h_.version < 2)
        return bad(what +
                   ": a per-block quantized activation needs format "
                   "version 2, the file says " +
                   std::to_string(h_.version));
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
                   m.arena_sizes()->Get(t->arena())) ||
          t->offset() % 16)
        return bad(what + ": planned range [" + std::to_string(t->offset()) +
                   ", +" + std::to_string(t->capacity()) +
                   ") is outside arena " + std::to_string(t->arena()));
      writable[v] = 1;
      return Status();
    case fbs::StorageKind::CONSTANT: {
      if (t->constant() >= numConstants_)
        return bad(what + ": constant index out of range");
      const fbs::Constant *c = prog_.constants()->Get(t->constant());
      if (c->size() < t->capacity())
        return bad(what + ": constant '" + c->name()->str() + "' holds " +
                   std::to_string(c->size()) + " bytes, needs " +
                   std::to_string(t->capacity()));
      return Status();
    }
    case fbs::StorageKind::BUFFER: {
      if (t->buffer() >= numBuffers_)
        return bad(what + ": buffer index out of range");
      const fbs::Buffer *b = prog_.buffers()->Get(t->buffer());
      if (b->nbytes() < t->capacity() ||
          static_cast<uint8_t>(b->dtype()) != static_cast<uint8_t>(dt))
        return bad(what + ": does not fit buffer '" + b->name()->str() + "'");
      // A quantized cache is read with the value's parameters: they must be
      // the buffer's (the module takes the buffer's).
      if (dt == DType::QAct && !sameQuant(q, quantOf(b)))
        return bad(what + ": its quantization differs from buffer '" +
                   b->name()->str() + "'");
      writable[v] = 1;
      return Status();
    }
    case fbs::StorageKind::ALIAS: {
      if (t->alias_of() >= v)
        return bad(what + ": aliases a later value");
      const fbs::Tensor *root = m.values()->Get(t->alias_of());
      if (root->capacity() < t->capacity())
        return bad(what + ": is larger than the value it aliases");
      writable[v] = writable[t->alias_of()];
      return Status();
    }
    default:
      return bad(what + ": unknown storage kind");
    }
  }

  /// Value indices `idx` (of `what` in method `m`) are in range and, when
  /// `mustWrite`, writable.
  Status indices(const fbs::Method &m, const Indices *idx,
                 const std::string &what, bool mustWrite,
                 const std::vector<uint8_t> &writable) const {
    if (!idx)
      return Status();
    uint32_t numValues = uint32_t(writable.size());
    for (uint32_t i : *idx) {
      if (i >= numValues)
        return bad("method '" + m.name()->str() + "': " + what +
                   " refers to value " + std::to_string(i) + " of " +
                   std::to_string(numValues));
      if (mustWrite && !writable[i])
        return bad("method '" + m.name()->str() + "': " + what +
                   " writes value " + std::to_string(i) +
                   ", which is read-only");
    }
    return Status();
  }

  /// The dtype and rank of values `idx` (checked in range).
  static std::vector<ValueDesc> describe(const fbs::Method &m,
                                         const Indices *idx) {
    std::vector<ValueDesc> d;
    if (idx)
      for (uint32_t i : *idx) {
        const fbs::Tensor *t = m.values()->Get(i);
        d.push_back({static_cast<DType>(t->dtype()),
                     int(t->sizes() ? t->sizes()->size() : 0)});
      }
    return d;
  }

  /// A kernel call: a known operator, its counts of inputs, outputs and
  /// attributes, its attributes' values, its values in range, and its
  /// contract (dtypes, ranks).
  Status kernelCall(const fbs::Method &m, const fbs::KernelCall &kc,
                    std::string what,
                    const std::vector<uint8_t> &writable) const {
    const OpInfo *op = findOp(kc.op()->c_str(), kc.op()->size());
    if (!op)
      return bad(what + ": unknown operator '" + kc.op()->str() + "'");
    what += " (" + std::string(op->name) + ")";
    uint32_t nin = kc.inputs() ? kc.inputs()->size() : 0;
    uint32_t nout = kc.outputs() ? kc.outputs()->size() : 0;
    uint32_t nints = kc.ints() ? kc.ints()->size() : 0;
    uint32_t nfloats = kc.floats() ? kc.floats()->size() : 0;
    if (int(nin) < op->minInputs ||
        (op->maxInputs >= 0 && int(nin) > op->maxInputs))
      return bad(what + ": " + std::to_string(nin) + " inputs");
    if (op->outputs >= 0 ? int(nout) != op->outputs : nout < 1)
      return bad(what + ": " + std::to_string(nout) + " outputs");
    if (op->numInts >= 0 ? int(nints) != op->numInts : false)
      return bad(what + ": " + std::to_string(nints) + " integer attributes");
    if (int(nfloats) != op->numFloats)
      return bad(what + ": " + std::to_string(nfloats) + " float attributes");
    Status attrs = checkIntAttrs(op->id, nin,
                                 {nints ? kc.ints()->data() : nullptr, nints});
    if (!attrs.ok())
      return bad(what + ": " + attrs.message());
    ETLLM_RETURN_IF_ERROR(indices(m, kc.inputs(), what, false, writable));
    ETLLM_RETURN_IF_ERROR(indices(m, kc.outputs(), what, true, writable));
    // The operator's contract (attributes, dtypes, ranks), now rather than
    // when the instruction runs.
    std::vector<int64_t> ints;
    std::vector<double> floats;
    if (kc.ints())
      ints.assign(kc.ints()->begin(), kc.ints()->end());
    if (kc.floats())
      floats.assign(kc.floats()->begin(), kc.floats()->end());
    Status contract = verifyKernelCall(
        *op, describe(m, kc.inputs()), describe(m, kc.outputs()), ints.data(),
        ints.size(), floats.data(), floats.size());
    if (!contract.ok())
      return bad("method '" + m.name()->str() + "', " + what + ": " +
                 contract.message());
    return Status();
  }

  Status method(const fbs::Method &m) const {
    const std::string mname = m.name()->str();
    uint32_t numValues = m.values() ? m.values()->size() : 0;
    uint32_t numArenas = m.arena_sizes() ? m.arena_sizes()->size() : 0;
    for (uint32_t a = 0; a < numArenas; ++a)
      if (m.arena_sizes()->Get(a) > (uint64_t(1) << 40))
        return bad("method '" + mname + "': arena " + std::to_string(a) +
                   " is larger than 1 TiB");
    std::vector<uint8_t> writable(numValues, 0);
    for (uint32_t v = 0; v < numValues; ++v)
      ETLLM_RETURN_IF_ERROR(value(m, v, writable));
    ETLLM_RETURN_IF_ERROR(indices(m, m.inputs(), "an input", true, writable));
    ETLLM_RETURN_IF_ERROR(
        indices(m, m.outputs(), "an output", false, writable));
    if (m.inputs())
      for (uint32_t i : *m.inputs())
        if (m.values()->Get(i)->storage() != fbs::StorageKind::PLANNED)
          return bad("method '" + mname + "': input value " +
                     std::to_string(i) + " is not planned memory");
    uint32_t numInstrs = m.instructions() ? m.instructions()->size() : 0;
    for (uint32_t k = 0; k < numInstrs; ++k) {
      const fbs::InstructionEntry *e = m.instructions()->Get(k);
      std::string what = "instruction " + std::to_string(k);
      if (const fbs::KernelCall *kc = e->instruction_as_KernelCall()) {
        ETLLM_RETURN_IF_ERROR(kernelCall(m, *kc, what, writable));
      } else if (const fbs::DelegateCall *dc =
                     e->instruction_as_DelegateCall()) {
        if (dc->delegate() >= numDelegates_)
          return bad(what + ": delegate index out of range");
        ETLLM_RETURN_IF_ERROR(indices(m, dc->inputs(), what, false, writable));
        ETLLM_RETURN_IF_ERROR(indices(m, dc->outputs(), what, true, writable));
      } else {
        return bad(what + ": unknown instruction kind");
      }
    }
    return Status();
  }

  Status tokenizer() const {
    if (const fbs::Metadata *m = prog_.metadata())
      if (const fbs::TokenizerInfo *t = m->tokenizer())
        if (t->file_segment() >= 0 &&
            uint32_t(t->file_segment()) >= numSegments_)
          return bad("the tokenizer refers to a missing segment");
    return Status();
  }

  /// Ring caches: at least one token per call, no more than the context;
  /// sinks fewer than the context.
  Status kvRing() const {
    const fbs::Metadata *m = prog_.metadata();
    const fbs::KvRing *r = m ? m->kv_ring() : nullptr;
    if (!r)
      return Status();
    const int64_t ctx = m->max_seq_len();
    if (r->chunk() < 1 || r->chunk() > ctx || r->sinks() < 0 ||
        r->sinks() >= ctx)
      return bad("the ring KV caches' chunk " + std::to_string(r->chunk()) +
                 " and sinks " + std::to_string(r->sinks()) +
                 " do not fit a context of " + std::to_string(ctx));
    return Status();
  }

  /// LoRA hooks: names distinct, features in range, the hash segment 32
  /// bytes. `numHooks` is their count (0 without a hook table).
  Status loraHooks(uint32_t &numHooks) const {
    const fbs::LoraHooks *l = prog_.lora();
    if (!l)
      return Status();
    constexpr int64_t kMaxFeatures = int64_t(1) << 24;
    if (l->max_rank() < 1 || l->max_rank() > kMaxLoraRank)
      return bad("LoRA max_rank " + std::to_string(l->max_rank()) +
                 " is outside 1.." + std::to_string(kMaxLoraRank));
    uint32_t n = l->hooks() ? l->hooks()->size() : 0;
    if (n == 0)
      return bad("the LoRA hook table is empty");
    std::set<std::string> names;
    for (uint32_t i = 0; i < n; ++i) {
      const fbs::LoraHook *hk = l->hooks()->Get(i);
      std::string name = hk->name()->str();
      std::string what = "LoRA hook " + std::to_string(i) + " ('" + name + "')";
      if (name.empty() || !names.insert(name).second)
        return bad(what + ": empty or repeated name");
      if (hk->in_features() < 1 || hk->in_features() > kMaxFeatures ||
          hk->out_features() < 1 || hk->out_features() > kMaxFeatures)
        return bad(what + ": features [" + std::to_string(hk->out_features()) +
                   ", " + std::to_string(hk->in_features()) + "] out of range");
    }
    int32_t seg = l->hash_segment();
    if (seg < 0 || uint32_t(seg) >= numSegments_ ||
        prog_.segments()->Get(uint32_t(seg))->size() != 32)
      return bad("the LoRA hash segment " + std::to_string(seg) +
                 " is missing or not 32 bytes");
    numHooks = n;
    return Status();
  }

  /// Every lora kernel call names one of the `numHooks` hooks.
  Status loraCalls(uint32_t numHooks) const {
    for (const fbs::Method *m : *prog_.methods()) {
      uint32_t numInstrs = m->instructions() ? m->instructions()->size() : 0;
      for (uint32_t k = 0; k < numInstrs; ++k) {
        const fbs::KernelCall *kc =
            m->instructions()->Get(k)->instruction_as_KernelCall();
        if (kc && kc->op()->str() == opInfo(OpId::Lora).name &&
            uint64_t(kc->ints()->Get(0)) >= numHooks)
          return bad("instruction " + std::to_string(k) + " (lora): hook " +
                     std::to_string(kc->ints()->Get(0)) + " of " +
                     std::to_string(numHooks));
      }
    }
    return Status();
  }
};

} // namespace

Status validateProgram(const fbs::Program &prog, const FileHeader &header,
                       const std::string &name) {
  return Validator(prog, header, name).run();
}

} // namespace etllm::rt::detail
