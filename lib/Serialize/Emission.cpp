//===- Emission.cpp - The program file: header, flatbuffer, segments ----===//
//
// Writes a lowered, planned program: the 64-byte header, the flatbuffer
// (value table, instructions, buffers, constants, segments, delegates,
// metadata) and the aligned segments: constants (weights produced on every
// core, written in order), delegate blobs, the embedded tokenizer.
//
//===----------------------------------------------------------------------===//
#include "Emission.h"

#include "Metadata.h"

#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Lora.h"
#include "etllm/Lowering/KernelCalls.h"
#include "etllm/Lowering/ProgramConfig.h"
#include "etllm/Lowering/Lowering.h"
#include "etllm/Lowering/WeightStore.h"
#include "etllm/Serialize/Streaming.h"
#include "etllm/runtime/program.h"
#include "etllm/schema/program_generated.h"

#include <algorithm>
#include <cstring>
#include <optional>

using namespace mlir;
using namespace mlir::etllm;
namespace fbs = ::etllm::schema;

namespace etllm {

/// Segments and the constants in them start at multiples of this.
static constexpr uint64_t kAlign = 64;

static uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// Constant bytes produced ahead of the writer at most (besides the one it
/// waits for).
static constexpr uint64_t kMaxBufferedConstantBytes = uint64_t(256) << 20;

/// The bytes of constant `c`: produced by a backend, inline, or read (and
/// converted) from the checkpoint.
static FailureOr<std::vector<uint8_t>> constantBytes(LoweredProgram &p,
                                                     ConstRec &c) {
  if (c.produce)
    return c.produce();
  if (!c.fromParameter)
    return c.inlineData;
  return p.weights.materialize(cast<ParameterOp>(c.op));
}

namespace {
/// One etllm.lora hook of the program, for its hook table.
struct HookRec {
  std::string target;
  int64_t in = 0, out = 0;
};
} // namespace

/// The program's LoRA hooks by index (every etllm.lora op, in `forward` or
/// an outlined delegate subgraph): indices 0..N-1, each once, targets
/// distinct. Empty without hooks.
static FailureOr<std::vector<HookRec>> collectLoraHooks(ModuleOp module) {
  std::vector<HookRec> hooks;
  std::vector<LoraOp> ops;
  module.walk([&](LoraOp h) { ops.push_back(h); });
  llvm::StringMap<int64_t> byTarget;
  hooks.resize(ops.size());
  for (LoraOp h : ops) {
    int64_t i = h.getHook();
    if (i < 0 || size_t(i) >= ops.size() || !hooks[i].target.empty())
      return h.emitError("LoRA hook ") << i << ": the program's " << ops.size()
                                       << " hooks must be numbered 0.."
                                       << ops.size() - 1 << ", each once";
    if (!byTarget.insert({h.getTarget(), i}).second)
      return h.emitError("LoRA hooks ")
             << byTarget[h.getTarget()] << " and " << i << " both target '"
             << h.getTarget() << "'";
    hooks[i] = {h.getTarget().str(), shapeOf(h.getInput().getType()).back(),
                shapeOf(h.getBase().getType()).back()};
  }
  return hooks;
}

namespace {
/// A method's table: its values, instructions and arena.
flatbuffers::Offset<fbs::Method> emitMethod(flatbuffers::FlatBufferBuilder &fb,
                                            const LoweredMethod &m) {
  std::vector<flatbuffers::Offset<fbs::Tensor>> fbValues;
  for (const ValueRec &v : m.values) {
    flatbuffers::Offset<fbs::QuantParams> q = 0;
    if (v.dtype == rt::DType::QWeight || v.dtype == rt::DType::QAct)
      q = fbs::CreateQuantParams(fb, v.quant.bits, v.quant.symmetric,
                                 static_cast<fbs::DType>(v.quant.scaleType),
                                 v.quant.groupSize, v.quant.perToken,
                                 static_cast<fbs::QScheme>(v.quant.scheme));
    std::vector<int64_t> sizes(v.sizes.begin(), v.sizes.end());
    std::vector<uint8_t> dyn(v.dynamic.begin(), v.dynamic.end());
    fbs::StorageKind kind = fbs::StorageKind::PLANNED;
    switch (v.storage) {
    case Storage::Planned:
      kind = fbs::StorageKind::PLANNED;
      break;
    case Storage::Constant:
      kind = fbs::StorageKind::CONSTANT;
      break;
    case Storage::Buffer:
      kind = fbs::StorageKind::BUFFER;
      break;
    case Storage::Alias:
      kind = fbs::StorageKind::ALIAS;
      break;
    }
    auto sizesVec = fb.CreateVector(sizes);
    auto dynVec = fb.CreateVector(dyn);
    auto name = fb.CreateString(v.name);
    fbs::TensorBuilder tb(fb);
    tb.add_dtype(static_cast<fbs::DType>(v.dtype));
    tb.add_sizes(sizesVec);
    tb.add_dynamic_dims(dynVec);
    tb.add_storage(kind);
    tb.add_arena(0);
    tb.add_offset(v.offset);
    tb.add_capacity(v.capacity);
    tb.add_constant(v.constant);
    tb.add_buffer(v.buffer);
    tb.add_alias_of(v.aliasOf);
    if (!q.IsNull())
      tb.add_quant(q);
    tb.add_name(name);
    fbValues.push_back(tb.Finish());
  }
  std::vector<flatbuffers::Offset<fbs::InstructionEntry>> fbInstrs;
  for (const InstrRec &in : m.instrs) {
    std::vector<uint32_t> ins(in.inputs.begin(), in.inputs.end());
    std::vector<uint32_t> outs(in.outputs.begin(), in.outputs.end());
    if (in.delegate >= 0) {
      auto dc = fbs::CreateDelegateCall(fb, in.delegate, fb.CreateVector(ins),
                                        fb.CreateVector(outs));
      fbInstrs.push_back(fbs::CreateInstructionEntry(
          fb, fbs::Instruction::DelegateCall, dc.Union()));
      continue;
    }
    std::vector<int64_t> ints(in.ints.begin(), in.ints.end());
    std::vector<double> floats(in.floats.begin(), in.floats.end());
    auto kc = fbs::CreateKernelCall(
        fb, fb.CreateString(in.op), fb.CreateVector(ins), fb.CreateVector(outs),
        fb.CreateVector(ints), fb.CreateVector(floats));
    fbInstrs.push_back(fbs::CreateInstructionEntry(
        fb, fbs::Instruction::KernelCall, kc.Union()));
  }
  std::vector<uint64_t> arenas = {m.arenaSize};
  mlir::func::FuncOp fn = m.func;
  return fbs::CreateMethod(fb, fb.CreateString(fn.getSymName().str()),
                           fb.CreateVector(fbValues), fb.CreateVector(m.inputs),
                           fb.CreateVector(m.outputs),
                           fb.CreateVector(fbInstrs), fb.CreateVector(arenas));
}
} // namespace

LogicalResult emitProgram(LoweredProgram &p, const SerializeOptions &options,
                          llvm::raw_ostream &os) {
  std::vector<ConstRec> &constants = p.constants;
  std::vector<DelegateRec> &delegates = p.delegates;
  // Constant segment layout.
  uint64_t constBytes = 0;
  for (ConstRec &c : constants) {
    c.offset = constBytes;
    constBytes = alignUp(constBytes + c.size, kAlign);
  }

  // The embedded tokenizer: a file given by the user (a GGUF vocabulary goes
  // in the metadata).
  FailureOr<EmbeddedTokenizer> loaded = loadTokenizer(p.module, options);
  if (failed(loaded))
    return failure();
  const EmbeddedTokenizer &tokenizer = *loaded;

  // The inputs are hashed (over their mapped bytes) and the constants
  // produced on every core while the flatbuffer is built; the constants are
  // written in order as they come (Streaming.h).
  const formats::Checkpoint *ckpt = nullptr;
  if (p.module->hasAttr(EtllmDialect::kCheckpointAttrName)) {
    ckpt = p.weights.checkpoint(p.module);
    if (!ckpt)
      return failure();
  }
  // Declared before the hasher: it reads them until it is destroyed (LoRA
  // adapters, the calibration text).
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> adapterFiles;
  InputHasher hasher;
  // Reads `path` and gives it to the hasher (in order).
  auto hashFile = [&](const std::string &path) -> LogicalResult {
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf)
      return p.module.emitError("cannot read '")
             << path << "': " << buf.getError().message();
    adapterFiles.push_back(std::move(*buf));
    hasher.add(
        reinterpret_cast<const uint8_t *>(adapterFiles.back()->getBufferStart()),
        adapterFiles.back()->getBufferSize());
    return success();
  };
  if (options.hashInputs) {
    if (ckpt)
      for (const auto &f : ckpt->files())
        hasher.add(f->data(), f->size());
    if (tokenizer.file)
      hasher.add(
          reinterpret_cast<const uint8_t *>(tokenizer.file->getBufferStart()),
          tokenizer.file->getBufferSize());
    if (p.module->hasAttr(EtllmDialect::kLoraAttrName)) {
      FailureOr<const std::vector<WeightStore::Adapter> *> adapters =
          p.weights.loraAdapters(p.module);
      if (failed(adapters))
        return failure();
      for (const WeightStore::Adapter &a : **adapters)
        for (const std::string &f : a.adapter->files())
          if (failed(hashFile(f)))
            return failure();
    }
    if (std::string f = calibrationFile(p.module); !f.empty())
      if (failed(hashFile(f)))
        return failure();
    hasher.start();
  }
  std::vector<uint64_t> constSizes;
  for (const ConstRec &c : constants)
    constSizes.push_back(c.size);
  OrderedProducer producer(
      p.module.getContext(), std::move(constSizes),
      options.threads ? options.threads : defaultProducerThreads(),
      kMaxBufferedConstantBytes,
      [&p, &constants](size_t i) { return constantBytes(p, constants[i]); });

  // Segments: 0 = constants, then delegate blobs, then the tokenizer file.
  flatbuffers::FlatBufferBuilder fb(1 << 20);
  std::vector<std::pair<uint64_t, uint64_t>> segs;
  uint64_t segCursor = 0;
  auto addSegment = [&](uint64_t size) {
    segs.push_back({segCursor, size});
    segCursor = alignUp(segCursor + size, kAlign);
    return uint32_t(segs.size() - 1);
  };
  uint32_t constSeg = addSegment(constBytes);
  std::vector<uint32_t> delegateSegs;
  for (DelegateRec &d : delegates)
    delegateSegs.push_back(addSegment(d.blob.size()));
  int32_t tokSeg = tokenizer.file
                       ? int32_t(addSegment(tokenizer.file->getBufferSize()))
                       : -1;
  // LoRA hooks, and then the content hash as the last segment.
  FailureOr<std::vector<HookRec>> hooks = collectLoraHooks(p.module);
  if (failed(hooks))
    return failure();
  const bool hasHooks = !hooks->empty();
  int32_t hashSeg = hasHooks ? int32_t(addSegment(32)) : -1;

  std::vector<flatbuffers::Offset<fbs::Method>> methods;
  for (const LoweredMethod &m : p.methods)
    methods.push_back(emitMethod(fb, m));

  std::vector<flatbuffers::Offset<fbs::Buffer>> fbBuffers;
  for (BufferOp b : p.buffers) {
    Type t = b.getType();
    FailureOr<rt::DType> dt = runtimeDType(b, t);
    if (failed(dt))
      return failure();
    ArrayRef<int64_t> shape = shapeOf(t);
    std::vector<int64_t> sizes(shape.begin(), shape.end());
    const rt::QuantInfo quant = quantInfoOf(t);
    auto bytes = rt::storageBytes(*dt, sizes.data(), sizes.size(), quant);
    // Quantized buffers (int8 KV caches) say how; others have no params.
    flatbuffers::Offset<fbs::QuantParams> qp = 0;
    if (*dt == rt::DType::QAct)
      qp = fbs::CreateQuantParams(fb, quant.bits, quant.symmetric,
                                  static_cast<fbs::DType>(quant.scaleType),
                                  quant.groupSize, quant.perToken);
    fbBuffers.push_back(fbs::CreateBuffer(
        fb, fb.CreateString(b.getSymName().str()), static_cast<fbs::DType>(*dt),
        fb.CreateVector(sizes), bytes.ok() ? *bytes : 0, qp));
  }
  std::vector<flatbuffers::Offset<fbs::Constant>> fbConsts;
  for (const ConstRec &c : constants)
    fbConsts.push_back(fbs::CreateConstant(
        fb, fb.CreateString(c.name), constSeg, c.offset, c.size, c.elements));
  std::vector<flatbuffers::Offset<fbs::Segment>> fbSegs;
  for (auto [off, size] : segs)
    fbSegs.push_back(fbs::CreateSegment(fb, off, size));
  std::vector<flatbuffers::Offset<fbs::Delegate>> fbDelegates;
  for (size_t i = 0; i < delegates.size(); ++i) {
    std::vector<flatbuffers::Offset<fbs::KeyValue>> specs;
    for (auto &[k, v] : delegates[i].specs)
      specs.push_back(
          fbs::CreateKeyValue(fb, fb.CreateString(k), fb.CreateString(v)));
    fbDelegates.push_back(
        fbs::CreateDelegate(fb, fb.CreateString(delegates[i].backend),
                            delegateSegs[i], fb.CreateVector(specs)));
  }

  FailureOr<flatbuffers::Offset<fbs::Metadata>> meta =
      buildMetadata(fb, p, options, tokenizer, tokSeg,
                    [&](size_t i) { return hasher.hex(i); });
  if (failed(meta))
    return failure();
  // Version 2 only when a version-1 reader would misread the program: a
  // per-block QAct outside the delegate blobs; version 3 when a weight of a
  // ggml scheme is anywhere, delegate blobs included (program.h).
  uint32_t version = 1;
  for (const LoweredMethod &m : p.methods)
    for (const ValueRec &v : m.values)
      if (v.dtype == rt::DType::QAct && v.quant.groupSize != 0)
        version = 2;
  for (ParameterOp param : p.module.getOps<ParameterOp>())
    if (auto q = dyn_cast<QWeightType>(param.getType()); q && q.isGgml())
      version = 3;
  flatbuffers::Offset<fbs::LoraHooks> lora = 0;
  if (hasHooks) {
    auto maxRank = p.module->getAttrOfType<IntegerAttr>(
        EtllmDialect::kLoraMaxRankAttrName);
    if (!maxRank)
      return p.module.emitError("the program has LoRA hooks but no '")
             << EtllmDialect::kLoraMaxRankAttrName << "'";
    std::vector<flatbuffers::Offset<fbs::LoraHook>> fbHooks;
    for (const HookRec &h : *hooks)
      fbHooks.push_back(
          fbs::CreateLoraHook(fb, fb.CreateString(h.target), h.in, h.out));
    lora = fbs::CreateLoraHooks(fb, uint32_t(maxRank.getInt()),
                                fb.CreateVector(fbHooks), hashSeg);
  }
  auto program = fbs::CreateProgram(
      fb, version, fb.CreateVector(methods), fb.CreateVector(fbBuffers),
      fb.CreateVector(fbConsts), fb.CreateVector(fbSegs),
      fb.CreateVector(fbDelegates), *meta, lora);
  fbs::FinishProgramBuffer(fb, program);

  // Header.
  rt::FileHeader h{};
  std::memcpy(h.magic, rt::kProgramMagic, 8);
  h.version = version;
  h.headerSize = sizeof(rt::FileHeader);
  h.flatbufferOffset = sizeof(rt::FileHeader);
  h.flatbufferSize = fb.GetSize();
  h.segmentAlignment = kAlign;
  h.segmentBase = alignUp(h.flatbufferOffset + h.flatbufferSize, kAlign);
  h.segmentDataSize = segCursor;
  uint64_t written = 0;
  // The content hash of a program with LoRA hooks: SHA-256 of every byte
  // before the hash segment.
  std::optional<Sha256> contentHash;
  if (hasHooks)
    contentHash.emplace();
  auto emit = [&](const void *p, size_t n) {
    os.write(static_cast<const char *>(p), n);
    if (contentHash)
      contentHash->update(p, n);
    written += n;
  };
  auto padTo = [&](uint64_t target) {
    static const char zeros[kAlign] = {};
    while (written < target) {
      size_t n = std::min<uint64_t>(kAlign, target - written);
      emit(zeros, n);
    }
  };
  emit(&h, sizeof h);
  emit(fb.GetBufferPointer(), fb.GetSize());
  padTo(h.segmentBase);
  // Constants, written in order as the producer hands them over.
  uint64_t doneBytes = 0;
  if (options.progressBytes)
    options.progressBytes(0, constBytes);
  for (ConstRec &c : constants) {
    padTo(h.segmentBase + segs[constSeg].first + c.offset);
    FailureOr<std::vector<uint8_t>> bytes = producer.next();
    if (failed(bytes))
      return failure();
    if (bytes->size() != c.size)
      return c.op->emitError("internal error: materialized ")
             << bytes->size() << " bytes, planned " << c.size;
    emit(bytes->data(), bytes->size());
    doneBytes += c.size;
    if (options.progress && constBytes)
      options.progress(double(doneBytes) / double(constBytes));
    if (options.progressBytes)
      options.progressBytes(doneBytes, constBytes);
  }
  for (size_t i = 0; i < delegates.size(); ++i) {
    padTo(h.segmentBase + segs[delegateSegs[i]].first);
    emit(delegates[i].blob.data(), delegates[i].blob.size());
  }
  if (tokenizer.file) {
    padTo(h.segmentBase + segs[tokSeg].first);
    emit(tokenizer.file->getBufferStart(), tokenizer.file->getBufferSize());
  }
  if (hasHooks) {
    padTo(h.segmentBase + segs[hashSeg].first);
    std::array<uint8_t, 32> digest = contentHash->finish();
    contentHash.reset();
    emit(digest.data(), digest.size());
  }
  padTo(h.segmentBase + h.segmentDataSize);
  os.flush();
  return success();
}

} // namespace etllm
