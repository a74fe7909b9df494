//===- WeightStore.cpp - Parameter bytes, materialized lazily -------------===//
#include "etllm/Lowering/WeightStore.h"

#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Formats/Checkpoint.h"
#include "etllm/Formats/Lora.h"
#include "etllm/Lowering/KernelCalls.h"
#include "etllm/Formats/Quantizer.h"
#include "etllm/runtime/half.h"

#include "llvm/Support/FileSystem.h"

#include <cstring>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {

WeightStore::WeightStore(ModuleOp module) : module(module) {}
WeightStore::~WeightStore() = default;

void WeightStore::useCheckpoint(
    std::shared_ptr<const formats::Checkpoint> opened) {
  std::lock_guard<std::mutex> lock(openMutex);
  auto path =
      module->getAttrOfType<StringAttr>(EtllmDialect::kCheckpointAttrName);
  if (!opened || triedOpen || !path)
    return;
  // The module records the absolute path; `opened` the one it was given.
  bool same = opened->path() == path.getValue();
  if (!same && llvm::sys::fs::equivalent(opened->path(), path.getValue(), same))
    return;
  if (!same)
    return;
  ckpt = std::move(opened);
  triedOpen = true;
}

const formats::Checkpoint *WeightStore::checkpoint(Operation *diagOp) {
  std::lock_guard<std::mutex> lock(openMutex);
  if (!triedOpen) {
    triedOpen = true;
    auto path =
        module->getAttrOfType<StringAttr>(EtllmDialect::kCheckpointAttrName);
    if (!path) {
      diagOp->emitError("parameter has no inline value and the module has no ")
          << EtllmDialect::kCheckpointAttrName << " attribute";
      return nullptr;
    }
    formats::OpenOptions opts;
    opts.validateTensors = false; // the IR says which tensors are needed
    if (auto mm = module->getAttrOfType<StringAttr>(
            EtllmDialect::kMmprojAttrName))
      opts.mmproj = mm.str();
    if (auto vw = module->getAttrOfType<StringAttr>(
            EtllmDialect::kVisionWeightsAttrName))
      opts.visionWeights = vw.str();
    auto opened = formats::openCheckpoint(path.str(), opts);
    if (!opened.ok()) {
      diagOp->emitError("cannot open the checkpoint: ") << opened.message();
      return nullptr;
    }
    ckpt = std::move(opened.value());
  }
  if (!ckpt)
    diagOp->emitError("the checkpoint could not be opened");
  return ckpt.get();
}

FailureOr<const std::vector<WeightStore::Adapter> *>
WeightStore::loraAdapters(Operation *diagOp) {
  std::lock_guard<std::mutex> lock(loraMutex);
  if (!triedAdapters) {
    triedAdapters = true;
    auto list = module->getAttrOfType<ArrayAttr>(EtllmDialect::kLoraAttrName);
    for (Attribute a : list ? list.getValue() : ArrayRef<Attribute>()) {
      auto d = dyn_cast<DictionaryAttr>(a);
      auto path = d ? d.getAs<StringAttr>("path") : StringAttr();
      auto scale = d ? d.getAs<FloatAttr>("scale") : FloatAttr();
      if (!path || !scale) {
        adaptersFailed = true;
        diagOp->emitError("malformed ") << EtllmDialect::kLoraAttrName;
        break;
      }
      // The base gives a GGUF adapter its q/k head counts.
      const formats::Checkpoint *base =
          module->hasAttr(EtllmDialect::kCheckpointAttrName)
              ? checkpoint(diagOp)
              : nullptr;
      auto opened = formats::LoraAdapter::open(path.str(), base);
      if (!opened.ok()) {
        adaptersFailed = true;
        diagOp->emitError("cannot open the LoRA adapter: ") << opened.message();
        break;
      }
      adapters.push_back({std::move(opened.value()), scale.getValueAsDouble()});
    }
  }
  if (adaptersFailed) {
    diagOp->emitError("the LoRA adapters could not be opened");
    return failure();
  }
  return &adapters;
}

FailureOr<bool> WeightStore::hasLoraDelta(ParameterOp param) {
  if (!module->hasAttr(EtllmDialect::kLoraAttrName))
    return false;
  FailureOr<const std::vector<Adapter> *> list = loraAdapters(param);
  if (failed(list))
    return failure();
  for (const Adapter &a : **list) {
    if (a.adapter->find(param.getSymName()))
      return true;
    // A stacked parameter (etllm.moe's experts) is adapted where any of its
    // parts is.
    if (std::optional<ArrayAttr> stack = param.getStack())
      for (Attribute part : *stack)
        if (a.adapter->find(cast<StringAttr>(part).getValue()))
          return true;
  }
  return false;
}

FailureOr<uint64_t> WeightStore::byteSize(ParameterOp param) {
  Type t = param.getType();
  ArrayRef<int64_t> shape = shapeOf(t);
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  if (auto q = dyn_cast<QWeightType>(t)) {
    int64_t cols = shape.back();
    auto layout =
        rt::QWeightLayout::compute(numel / cols, cols, quantInfoOf(q));
    if (!layout.ok())
      return param.emitError(layout.message());
    return uint64_t(layout->totalBytes);
  }
  Type et = cast<RankedTensorType>(t).getElementType();
  return uint64_t(numel) * ((et.getIntOrFloatBitWidth() + 7) / 8);
}

FailureOr<std::vector<const formats::TensorRef *>>
WeightStore::sourceTensors(ParameterOp param, const formats::Checkpoint &c) {
  ArrayRef<int64_t> shape = shapeOf(param.getType());
  std::vector<std::string> names;
  std::vector<int64_t> partShape(shape.begin(), shape.end());
  if (std::optional<ArrayAttr> stack = param.getStack()) {
    for (Attribute a : *stack)
      names.push_back(cast<StringAttr>(a).str());
    partShape.erase(partShape.begin());
  } else {
    names.push_back(param.getSourceName().str());
  }
  std::vector<const formats::TensorRef *> parts;
  for (const std::string &name : names) {
    const formats::TensorRef *t = c.find(name);
    if (!t)
      return param.emitError("tensor '") << name << "' is not in " << c.path();
    if (t->shape != partShape)
      return param.emitError("tensor '")
             << name << "' in " << c.path() << " has shape "
             << formats::shapeToString(t->shape) << ", the IR declares "
             << formats::shapeToString(partShape);
    parts.push_back(t);
  }
  return parts;
}

FailureOr<std::vector<float>> WeightStore::floatValues(ParameterOp param) {
  ArrayRef<int64_t> shape = shapeOf(param.getType());
  std::vector<float> values;
  if (std::optional<ElementsAttr> inline_ = param.getValue()) {
    auto dense = dyn_cast<DenseElementsAttr>(*inline_);
    if (!dense || !isa<FloatType>(dense.getElementType()))
      return param.emitError("inline parameter values must be dense floats");
    for (APFloat v : dense.getValues<APFloat>()) {
      bool lost;
      v.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v.convertToFloat());
    }
    return values;
  }
  const formats::Checkpoint *c = checkpoint(param);
  if (!c)
    return failure();
  // One tensor, or (a stacked parameter) each part of the trailing shape.
  FailureOr<std::vector<const formats::TensorRef *>> parts =
      sourceTensors(param, *c);
  if (failed(parts))
    return failure();
  for (const formats::TensorRef *t : *parts) {
    auto f = formats::toFloat32(*t);
    if (!f.ok())
      return param.emitError(f.message());
    if (parts->size() == 1)
      values = std::move(*f); // no second copy of a whole weight
    else
      values.insert(values.end(), f->begin(), f->end());
  }
  if (std::optional<int64_t> heads = param.getQkPermuteHeads()) {
    std::vector<float> permuted(values.size());
    std::vector<int64_t> s(shape.begin(), shape.end());
    rt::Status st = formats::permuteQkRowsToRotateHalf(
        formats::DType::F32, s, *heads,
        reinterpret_cast<const uint8_t *>(values.data()),
        reinterpret_cast<uint8_t *>(permuted.data()));
    if (!st.ok())
      return param.emitError(st.message());
    values.swap(permuted);
  }
  // LoRA: W += scale * scaling * B A, in HF row order, before quantization.
  if (module->hasAttr(EtllmDialect::kLoraAttrName)) {
    FailureOr<const std::vector<Adapter> *> list = loraAdapters(param);
    if (failed(list))
      return failure();
    int64_t cols = shape.empty() ? 1 : shape.back();
    int64_t rows = cols ? int64_t(values.size()) / cols : 0;
    // A stacked parameter merges each part (an expert's weight, named as in
    // the checkpoint) into its rows of the whole.
    std::vector<std::string> names;
    if (std::optional<ArrayAttr> stack = param.getStack())
      for (Attribute part : *stack)
        names.push_back(cast<StringAttr>(part).str());
    else
      names.push_back(param.getSymName().str());
    const int64_t partRows = rows / int64_t(names.size());
    for (const Adapter &a : **list)
      for (size_t j = 0; j < names.size(); ++j)
        if (rt::Status st = a.adapter->mergeInto(
                names[j], a.scale, partRows, cols,
                values.data() + int64_t(j) * partRows * cols);
            !st.ok())
          return param.emitError(st.message());
  }
  return values;
}

FailureOr<std::vector<uint8_t>> WeightStore::materialize(ParameterOp param) {
  Type type = param.getType();
  ArrayRef<int64_t> shape = shapeOf(type);
  int64_t cols = shape.back(), rows = 1;
  for (int64_t d : shape.drop_back())
    rows *= d;

  // Exact paths first: F32 -> f32 as is; GGUF blocks -> the same scheme
  // (not for a weight a LoRA adapter changes).
  FailureOr<bool> merged = hasLoraDelta(param);
  if (failed(merged))
    return failure();
  if (!param.getValue() && !*merged) {
    const formats::Checkpoint *c = checkpoint(param);
    if (!c)
      return failure();
    // A stacked parameter's parts are rows of the whole, in order: the
    // exact paths concatenate their bytes (GGUF's stacked experts, opened
    // as slices, go back to their blocks unchanged).
    std::vector<const formats::TensorRef *> parts;
    if (ArrayAttr stack = param.getStackAttr()) {
      bool ok = true;
      for (Attribute a : stack) {
        const formats::TensorRef *t = c->find(cast<StringAttr>(a).getValue());
        ok &= t &&
              t->shape == std::vector<int64_t>(shape.begin() + 1, shape.end());
        parts.push_back(t);
      }
      if (!ok)
        parts.clear(); // the float path below reports the error
    } else if (const formats::TensorRef *t = c->find(param.getSourceName());
               t &&
               t->shape == std::vector<int64_t>(shape.begin(), shape.end())) {
      parts.push_back(t);
    }
    auto same = [&](const formats::TensorRef *t) {
      return t->parts.empty() && t->dtype == parts.front()->dtype &&
             (t->qkPermuteHeads > 0) == (parts.front()->qkPermuteHeads > 0);
    };
    if (!parts.empty() && llvm::all_of(parts, same)) {
      const formats::TensorRef *t = parts.front();
      std::vector<uint8_t> raw;
      bool f32Target = isa<RankedTensorType>(type) &&
                       cast<RankedTensorType>(type).getElementType().isF32();
      auto q = dyn_cast<QWeightType>(type);
      bool repack = q && canRepackExactly(t->dtype, quantInfoOf(q));
      // A ggml scheme is the tensor's blocks themselves (its rows permuted
      // like any row of a GGUF q/k weight).
      std::optional<rt::QScheme> ggml = ggmlSchemeOf(t->dtype);
      bool keep = q && q.isGgml() && ggml &&
                  static_cast<rt::QScheme>(q.getScheme()) == *ggml;
      if ((f32Target && t->dtype == formats::DType::F32) || repack || keep) {
        for (const formats::TensorRef *p : parts) {
          size_t at = raw.size();
          if (p->qkPermuteHeads > 0) {
            raw.resize(at + p->nbytes);
            rt::Status st = formats::permuteQkRowsToRotateHalf(
                p->dtype, p->shape, p->qkPermuteHeads, p->data,
                raw.data() + at);
            if (!st.ok())
              return param.emitError(st.message());
          } else {
            raw.insert(raw.end(), p->data, p->data + p->nbytes);
          }
        }
        if (!repack) // f32, or a ggml scheme's blocks
          return raw;
        auto packed = repackGgufBlocks(t->dtype, raw.data(), rows, cols);
        if (!packed.ok())
          return param.emitError(packed.message());
        return std::move(packed.value());
      }
    }
  }

  if (auto q = dyn_cast<QWeightType>(type); q && q.isGgml())
    return param.emitError("a ")
           << stringifyQWeightScheme(q.getScheme())
           << " weight is kept from a GGUF tensor of that type, unchanged "
              "(the tensor '"
           << param.getSourceName()
           << "' is of another type, stacked, or changed by a LoRA adapter)";

  // A quantized weight read from one tensor as it is in the file: converted
  // and quantized a block of rows at a time into the output, so the f32
  // copy of the whole weight (4 bytes per weight, on fresh pages for every
  // weight: most of an F16 -> int4 export's page faults) is never made.
  // Rows quantized in blocks give quantizeRows' bytes (quantizeRowsInto).
  if (auto q = dyn_cast<QWeightType>(type); q && !param.getValue() &&
                                            !*merged && !param.getStackAttr() &&
                                            !param.getQkPermuteHeads()) {
    const formats::Checkpoint *c = checkpoint(param);
    if (!c)
      return failure();
    const formats::TensorRef *t = c->find(param.getSourceName());
    if (t && t->parts.empty() && t->qkPermuteHeads == 0 &&
        t->shape == std::vector<int64_t>(shape.begin(), shape.end()) &&
        cols % formats::dtypeBlockSize(t->dtype) == 0) {
      const rt::QuantInfo qi = quantInfoOf(q);
      rt::Result<rt::QWeightLayout> layout =
          rt::QWeightLayout::compute(rows, cols, qi);
      if (!layout.ok())
        return param.emitError(layout.message());
      std::vector<uint8_t> out(layout->totalBytes, 0);
      const int64_t block = std::max<int64_t>(1, (int64_t(1) << 18) / cols);
      std::vector<float> buf(size_t(std::min(block, rows) * cols));
      for (int64_t r0 = 0; r0 < rows; r0 += block) {
        const int64_t n = std::min(block, rows - r0);
        if (rt::Status st = formats::toFloat32Range(
                *t, uint64_t(r0 * cols), uint64_t(n * cols), buf.data());
            !st.ok())
          return param.emitError(st.message());
        quantizeRowsInto(buf.data(), r0, n, *layout, qi, out.data());
      }
      return out;
    }
  }

  FailureOr<std::vector<float>> values = floatValues(param);
  if (failed(values))
    return failure();
  if (auto q = dyn_cast<QWeightType>(type)) {
    auto packed = quantizeRows(values->data(), rows, cols, quantInfoOf(q));
    if (!packed.ok())
      return param.emitError(packed.message());
    return std::move(packed.value());
  }
  Type et = cast<RankedTensorType>(type).getElementType();
  std::vector<uint8_t> out;
  if (et.isF32()) {
    out.resize(values->size() * 4);
    std::memcpy(out.data(), values->data(), out.size());
  } else if (et.isF16() || et.isBF16()) {
    out.resize(values->size() * 2);
    for (size_t i = 0; i < values->size(); ++i) {
      uint16_t h = et.isF16() ? rt::floatToHalf((*values)[i])
                              : rt::floatToBf16((*values)[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  } else {
    return param.emitError("parameters of element type ")
           << et << " are not supported";
  }
  return out;
}

} // namespace etllm
