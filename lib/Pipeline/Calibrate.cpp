//===- Calibrate.cpp - Activation ranges for static quantization ----------===//
//
// The module as it stands (float weights and activations) is serialized as
// a portable program and run on windows of the calibration text, one token
// per call (as decoding runs), with the
// `linear` kernel wrapped to record the largest |x| of its input. The n-th
// linear call of an execution is the n-th etllm.linear of `forward` (the
// lowering keeps the order of the ops: checked by counting them), so each
// op gets its own range. No library does this for our IR and runtime; the
// runtime's kernel table is the hook.
//
//===----------------------------------------------------------------------===//
#include "etllm/Pipeline/Calibrate.h"

#include "etllm/Dialect/Etllm/EtllmDialect.h"
#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Formats/TextFile.h"
#include "etllm/Serialize/ProgramWriter.h"
#include "etllm/runtime/half.h"
#include "etllm/runtime/kernel.h"
#include "etllm/runtime/llm/method_names.h"
#include "etllm/runtime/llm/runner.h"
#include "etllm/runtime/program.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace mlir;
using namespace mlir::etllm;

namespace etllm {
namespace {

/// What the wrapped `linear` kernel records, for the calling thread's
/// executions (calibration runs on one thread).
struct LinearRanges {
  std::vector<double> absmax;
  size_t next = 0; // the index of the next linear call of this execution
};
thread_local LinearRanges *tRanges = nullptr;

/// The largest finite |x| of the n values `load(i)` gives.
template <typename Load> double absMax(int64_t n, Load load) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::fabs(load(i));
    if (std::isfinite(v))
      m = std::max(m, v);
  }
  return m;
}

rt::Status observingLinear(const rt::KernelArgs &a) {
  if (tRanges && a.inputs.size > 0) {
    const rt::Tensor &x = *a.inputs[0];
    const int64_t n = x.numel();
    double m = 0;
    if (x.dtype == rt::DType::F32)
      m = absMax(n, [&](int64_t i) { return x.ptr<float>()[i]; });
    else if (x.dtype == rt::DType::F16)
      m = absMax(
          n, [&](int64_t i) { return rt::halfToFloat(x.ptr<uint16_t>()[i]); });
    else if (x.dtype == rt::DType::BF16)
      m = absMax(
          n, [&](int64_t i) { return rt::bf16ToFloat(x.ptr<uint16_t>()[i]); });
    if (tRanges->next >= tRanges->absmax.size())
      tRanges->absmax.push_back(0);
    double &slot = tRanges->absmax[tRanges->next++];
    slot = std::max(slot, m);
  }
  return rt::portableKernels().get(rt::OpId::Linear)(a);
}

struct CalibratePass
    : public PassWrapper<CalibratePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CalibratePass)

  CalibratePass() = default;
  CalibratePass(const CalibratePass &other) : PassWrapper(other) {}
  explicit CalibratePass(const CalibrateOptions &o) {
    file = o.file;
    samples = o.samples;
    window = o.window;
    tokenizer = o.tokenizer;
  }

  StringRef getArgument() const override { return "etllm-calibrate"; }
  StringRef getDescription() const override {
    return "Record each linear's input range on a text (static activation "
           "quantization)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<EtllmDialect>();
  }

  Option<std::string> file{*this, "file",
                           llvm::cl::desc("The calibration text (UTF-8)")};
  Option<int64_t> samples{
      *this, "samples",
      llvm::cl::desc("Windows of the text run, each from position 0"),
      llvm::cl::init(8)};
  Option<int64_t> window{
      *this, "window",
      llvm::cl::desc("Tokens per window (at most max_seq_len)"),
      llvm::cl::init(128)};
  Option<std::string> tokenizer{
      *this, "tokenizer",
      llvm::cl::desc("Tokenizer file (default: the checkpoint's)")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fail = [&](const Twine &message) {
      module.emitError() << "etllm-calibrate: " << message;
      signalPassFailure();
    };
    if (file.empty())
      return fail("no calibration text (quantization.calibration)");
    if (samples < 1 || samples > 4096)
      return fail("samples must be in 1..4096, got " + Twine(samples));
    if (window < 1)
      return fail("window must be at least 1, got " + Twine(window));
    int64_t len = window;
    ModelConfigAttr config = getModelConfig(module);
    if (config && config.getMaxSeqLen() > 0)
      len = std::min<int64_t>(len, config.getMaxSeqLen());
    auto forward = module.lookupSymbol<func::FuncOp>(rt::llm::kForwardMethod);
    if (!forward)
      return fail("the module has no `forward` (calibrate before the "
                  "static methods)");
    SmallVector<LinearOp> linears;
    forward.walk([&](LinearOp l) { linears.push_back(l); });
    if (linears.empty())
      return; // nothing to calibrate

    // The text, bounded before it is read.
    rt::Result<std::string> text =
        formats::readTextFile(file, kMaxCalibrationBytes);
    if (!text.ok())
      return fail(text.message());

    // The float program as it stands.
    OwningOpRef<ModuleOp> copy(module.clone());
    SerializeOptions so;
    so.hashInputs = false;
    so.tokenizerPath = tokenizer;
    std::string bytes;
    llvm::raw_string_ostream os(bytes);
    if (failed(writeProgram(*copy, so, os)))
      return fail("cannot serialize the float program to calibrate it");
    os.flush();
    auto program = rt::Program::loadFromBuffer(
        reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(),
        "<calibration program>");
    if (!program.ok())
      return fail(program.message());
    auto tok = rt::llm::tokenizerForProgram(**program);
    if (!tok.ok())
      return fail("no tokenizer for the calibration text (" + tok.message() +
                  "): give one with --tokenizer");
    auto tokens = (*tok)->encode(*text, /*addBos=*/true);
    if (!tokens.ok())
      return fail("'" + file + "': " + tokens.message());
    if (tokens->size() < 2)
      return fail("'" + file + "' holds no text to calibrate on");

    rt::KernelTable kernels = rt::portableKernels();
    kernels.set(rt::OpId::Linear, &observingLinear);
    rt::ModuleOptions mo;
    mo.kernels = &kernels;
    auto instance = rt::Module::create(*program, mo);
    if (!instance.ok())
      return fail(instance.message());
    auto method = (*instance)->method(rt::llm::kForwardMethod);
    if (!method.ok())
      return fail(method.message());
    // One token per call, as decoding runs: every linear sees every
    // position, the output layer too (which a program that returns only
    // the last position's logits applies to the last row of a call).
    LinearRanges ranges;
    ranges.absmax.assign(linears.size(), 0);
    tRanges = &ranges;
    struct Unset {
      ~Unset() { tRanges = nullptr; }
    } unset; // on every return
    size_t at = 0;
    int64_t ran = 0;
    for (; ran < samples && at < tokens->size(); ++ran) {
      const size_t n = std::min<size_t>(size_t(len), tokens->size() - at);
      (*instance)->resetState();
      for (size_t i = 0; i < n; ++i) {
        int64_t token = (*tokens)[at + i], pos = int64_t(i);
        int64_t sizes[2] = {1, 1}, one = 1;
        ranges.next = 0;
        rt::Status st =
            (*method)->setInput(0, rt::DType::I64, sizes, 2, &token);
        if (st.ok())
          st = (*method)->setInput(1, rt::DType::I64, &one, 1, &pos);
        if (st.ok())
          st = (*method)->execute();
        if (!st.ok())
          return fail(st.message());
        if (ranges.next != linears.size())
          return fail("the calibration program ran " + Twine(ranges.next) +
                      " linear layers, `forward` has " + Twine(linears.size()));
      }
      at += n;
    }
    Builder b(module.getContext());
    for (size_t i = 0; i < linears.size(); ++i)
      linears[i]->setAttr(EtllmDialect::kActAbsMaxAttrName,
                          b.getF64FloatAttr(ranges.absmax[i]));
    module->setAttr(
        EtllmDialect::kCalibrationAttrName,
        b.getDictionaryAttr(
            {b.getNamedAttr("file", b.getStringAttr(file)),
             b.getNamedAttr("samples", b.getI64IntegerAttr(ran)),
             b.getNamedAttr("tokens", b.getI64IntegerAttr(int64_t(at)))}));
  }
};

} // namespace

std::unique_ptr<mlir::Pass> createCalibratePass(const CalibrateOptions &o) {
  return std::make_unique<CalibratePass>(o);
}

void registerCalibratePass() { PassRegistration<CalibratePass>(); }

} // namespace etllm
