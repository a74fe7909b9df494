//===- Tester.cpp - Chain stages in tests and check after any -------------===//
#include "etllm/Pipeline/Tester.h"

#include "etllm/Dialect/Etllm/EtllmModelConfig.h"
#include "etllm/InitAll.h"
#include "etllm/runtime/backend.h"
#include "etllm/runtime/llm/method_names.h"
#include "etllm/runtime/llm/static_methods.h"
#include "etllm/runtime/program.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <sstream>

namespace etllm {

llvm::Expected<std::vector<CallOutput>>
runProgram(const std::string &bytes, const std::vector<int64_t> &tokens,
           size_t prefill, size_t threads) {
  auto err = [](const std::string &m) {
    return llvm::make_error<llvm::StringError>(m,
                                               llvm::inconvertibleErrorCode());
  };
  auto program = rt::Program::loadFromBuffer(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(),
      "<in-memory program>");
  if (!program.ok())
    return err(program.message());
  rt::ModuleOptions mo;
  mo.numThreads = threads;
  auto module = rt::Module::create(*program, mo);
  if (!module.ok())
    return err(module.message());
  // A static program (prefill and decode) takes the calls through the
  // runner's step and gives each call's last real token's logits.
  auto statics = rt::llm::StaticMethods::open(
      **module, (*program)->name(), (*program)->metadata().contextLimit());
  if (!statics.ok())
    return err(statics.message());
  rt::Method *method = nullptr;
  if (!*statics) {
    auto m = (*module)->method(rt::llm::kForwardMethod);
    if (!m.ok())
      return err(m.message());
    method = *m;
  }
  // One call: tokens [pos, pos + n) -> its logits.
  auto call = [&](const std::vector<int64_t> &tok,
                  size_t pos) -> llvm::Expected<CallOutput> {
    CallOutput c;
    if (*statics) {
      rt::llm::StaticMethods &s = **statics;
      auto logits = s.forward(tok, int64_t(pos));
      if (!logits.ok())
        return err(logits.message());
      c.shape = {1, 1, s.vocab()};
      c.values.assign(*logits, *logits + s.vocab());
      return c;
    }
    const size_t n = tok.size();
    std::vector<int64_t> positions(n);
    for (size_t i = 0; i < n; ++i)
      positions[i] = int64_t(pos + i);
    int64_t tsizes[2] = {1, int64_t(n)}, psize = int64_t(n);
    if (auto st = method->setInput(0, rt::DType::I64, tsizes, 2, tok.data());
        !st.ok())
      return err(st.message());
    if (auto st =
            method->setInput(1, rt::DType::I64, &psize, 1, positions.data());
        !st.ok())
      return err(st.message());
    if (auto st = method->execute(); !st.ok())
      return err(st.message());
    const rt::Tensor &o = method->output(0);
    if (o.dtype != rt::DType::F32)
      return err("the program's output is not f32");
    c.shape.assign(o.sizes, o.sizes + o.rank);
    c.values.assign(o.ptr<float>(), o.ptr<float>() + o.numel());
    return c;
  };
  std::vector<CallOutput> outs;
  for (size_t pos = 0; pos < tokens.size();) {
    size_t n =
        pos == 0 ? std::max<size_t>(1, std::min(prefill, tokens.size())) : 1;
    auto c = call({tokens.begin() + pos, tokens.begin() + pos + n}, pos);
    if (!c)
      return c.takeError();
    outs.push_back(std::move(*c));
    pos += n;
  }
  return outs;
}

Tester::Tester() {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  context = std::make_unique<mlir::MLIRContext>(registry);
  context->loadAllAvailableDialects();
}

Tester::Tester(std::string path, ImportOptions options) : Tester() {
  checkpointPath = std::move(path);
  importOptions = std::move(options);
}

Tester::~Tester() = default;

std::unique_ptr<Tester> Tester::fromIR(const std::string &text) {
  std::unique_ptr<Tester> t(new Tester());
  auto module = mlir::parseSourceString<mlir::ModuleOp>(text, t->context.get());
  if (!module) {
    t->fail("the IR does not parse");
    return t;
  }
  t->history.push_back({"input", Artifact::ir(std::move(module))});
  return t;
}

void Tester::fail(const std::string &message) {
  failures.push_back(message);
  log.push_back("FAIL: " + message);
}

Tester &Tester::import() {
  auto stage = makeImportStage(importOptions);
  auto out = stage->run(Artifact::checkpoint(checkpointPath), *context);
  if (!out) {
    fail(llvm::toString(out.takeError()));
    return *this;
  }
  history.push_back({"import", std::move(*out)});
  log.push_back("stage import");
  return *this;
}

Tester &Tester::runStage(StageSpec spec) {
  if (history.empty() || history.back().artifact.kind != Artifact::Kind::IR) {
    fail("stage '" + spec.name + "' needs IR: import first");
    return *this;
  }
  auto stage = makePassStage(spec);
  auto out = stage->run(history.back().artifact.clone(), *context);
  if (!out) {
    fail(llvm::toString(out.takeError()));
    return *this;
  }
  history.push_back({spec.name, std::move(*out)});
  log.push_back("stage " + spec.name);
  return *this;
}

Tester &Tester::runPasses(const std::string &name,
                          const std::string &pipeline) {
  auto stage = makePassStage(name, pipeline);
  if (!stage) {
    fail(llvm::toString(stage.takeError()));
    return *this;
  }
  if (history.empty()) {
    fail("stage '" + name + "' needs IR: import first");
    return *this;
  }
  auto out = (*stage)->run(history.back().artifact.clone(), *context);
  if (!out) {
    fail(llvm::toString(out.takeError()));
    return *this;
  }
  history.push_back({name, std::move(*out)});
  log.push_back("stage " + name);
  return *this;
}

Tester &Tester::runRecipe(const std::string &recipe,
                          const RecipeOptions &options) {
  std::vector<StageSpec> stages = recipeStages(recipe, options);
  if (stages.empty())
    fail("unknown recipe '" + recipe + "'");
  for (StageSpec &s : stages) {
    runStage(s);
    if (!ok())
      break;
  }
  return *this;
}

mlir::ModuleOp Tester::currentIR() const {
  for (auto it = history.rbegin(); it != history.rend(); ++it)
    if (it->artifact.kind == Artifact::Kind::IR)
      return *it->artifact.module;
  return nullptr;
}

int64_t Tester::countOps(const std::string &opName) const {
  mlir::ModuleOp m = currentIR();
  if (!m)
    return -1;
  int64_t n = 0;
  m.walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() == opName)
      ++n;
  });
  return n;
}

Tester &Tester::checkCount(const std::string &opName, int64_t count) {
  int64_t n = countOps(opName);
  std::string where = history.empty() ? "" : history.back().stage;
  if (n != count)
    fail(llvm::formatv("after '{0}': expected {1} x {2}, found {3}", where,
                       count, opName, n));
  else
    log.push_back(llvm::formatv("check {0} x {1}: ok", count, opName));
  return *this;
}

Tester &Tester::checkNot(const std::string &opName) {
  int64_t n = countOps(opName);
  if (n != 0)
    fail(llvm::formatv("after '{0}': expected no {1}, found {2}",
                       history.empty() ? "" : history.back().stage, opName, n));
  return *this;
}

Tester &Tester::check(const std::string &opName) {
  int64_t n = countOps(opName);
  if (n <= 0)
    fail(llvm::formatv("after '{0}': expected some {1}, found none",
                       history.empty() ? "" : history.back().stage, opName));
  return *this;
}

bool Tester::runBoth(const std::string &against, std::vector<int64_t> tokens,
                     size_t prefill, std::vector<CallOutput> &ra,
                     std::vector<CallOutput> &rb, std::string &refName,
                     std::string &curName) {
  if (history.size() < 2) {
    fail("runAndCompare needs two stages");
    return false;
  }
  const Record &cur = history.back();
  const Record *ref = &history[history.size() - 2];
  if (!against.empty()) {
    ref = nullptr;
    for (const Record &r : history)
      if (r.stage == against)
        ref = &r;
    if (!ref) {
      fail("runAndCompare: no stage named '" + against + "'");
      return false;
    }
  }
  refName = ref->stage;
  curName = cur.stage;
  if (tokens.empty()) {
    // A fixed prompt (ids spread over the vocabulary), then decode steps.
    int64_t vocab = 32;
    if (mlir::ModuleOp m = currentIR())
      if (auto cfg = mlir::etllm::getModelConfig(m))
        if (cfg.getVocabSize() > 0)
          vocab = cfg.getVocabSize();
    for (int64_t i = 0; i < 10; ++i)
      tokens.push_back((1 + 37 * i) % vocab);
    prefill = 6;
  }
  if (prefill == 0)
    prefill = tokens.size();
  auto programOf = [&](const Record &r) -> llvm::Expected<std::string> {
    if (r.artifact.kind == Artifact::Kind::Program)
      return r.artifact.program;
    SerializeOptions so;
    so.hashInputs = false;
    auto stage = makeSerializeStage(so);
    auto out = stage->run(r.artifact.clone(), *context);
    if (!out)
      return out.takeError();
    return std::move(out->program);
  };
  auto a = programOf(*ref), b = programOf(cur);
  if (!a || !b) {
    fail("runAndCompare: " +
         (a ? llvm::toString(b.takeError()) : llvm::toString(a.takeError())));
    return false;
  }
  auto outA = runProgram(*a, tokens, prefill),
       outB = runProgram(*b, tokens, prefill);
  if (!outA || !outB) {
    fail("runAndCompare: running " + (outA ? cur.stage : ref->stage) + ": " +
         (outA ? llvm::toString(outB.takeError())
               : llvm::toString(outA.takeError())));
    return false;
  }
  ra = std::move(*outA);
  rb = std::move(*outB);
  for (size_t call = 0; call < ra.size(); ++call) {
    const CallOutput &x = ra[call], &y = rb[call];
    if (x.shape.empty() || y.shape.empty() ||
        x.shape.back() != y.shape.back()) {
      fail("runAndCompare: output shapes differ");
      return false;
    }
  }
  return true;
}

/// The last row (last position) of a call's logits.
static const float *lastRow(const CallOutput &c) {
  return c.values.data() + c.values.size() - size_t(c.shape.back());
}

Tester &Tester::runAndCompare(double atol, double rtol,
                              const std::string &against,
                              std::vector<int64_t> tokens, size_t prefill) {
  std::vector<CallOutput> ra, rb;
  std::string refName, curName;
  if (!runBoth(against, std::move(tokens), prefill, ra, rb, refName, curName))
    return *this;
  maxAbsDiff = 0;
  size_t bad = 0;
  std::string firstBad;
  for (size_t call = 0; call < ra.size(); ++call) {
    // Programs may return every position or only the last one: compare the
    // rows both have (the last).
    size_t vocab = size_t(ra[call].shape.back());
    const float *xr = lastRow(ra[call]), *yr = lastRow(rb[call]);
    for (size_t i = 0; i < vocab; ++i) {
      double d = std::fabs(double(xr[i]) - double(yr[i]));
      maxAbsDiff = std::max(maxAbsDiff, d);
      if (!(d <= atol + rtol * std::fabs(double(xr[i])))) {
        if (bad++ == 0)
          firstBad = llvm::formatv("call {0}, logit {1}: {2} ('{3}') vs {4} "
                                   "('{5}')",
                                   call, i, xr[i], refName, yr[i], curName);
      }
    }
  }
  if (bad)
    fail(llvm::formatv("'{0}' vs '{1}': {2} logits outside atol {3} + rtol "
                       "{4} (max abs diff {5}); first: {6}",
                       curName, refName, bad, atol, rtol, maxAbsDiff,
                       firstBad));
  else
    log.push_back(llvm::formatv("compare '{0}' vs '{1}': max abs diff {2:e}",
                                curName, refName, maxAbsDiff));
  return *this;
}

Tester &Tester::runAndCompareRelative(double maxRelRms, double minTop1,
                                      const std::string &against) {
  std::vector<CallOutput> ra, rb;
  std::string refName, curName;
  if (!runBoth(against, {}, 0, ra, rb, refName, curName))
    return *this;
  relRms = 0;
  size_t agree = 0;
  for (size_t call = 0; call < ra.size(); ++call) {
    size_t vocab = size_t(ra[call].shape.back());
    const float *xr = lastRow(ra[call]), *yr = lastRow(rb[call]);
    double num = 0, den = 0;
    size_t ax = 0, ay = 0;
    for (size_t i = 0; i < vocab; ++i) {
      num += (double(yr[i]) - xr[i]) * (double(yr[i]) - xr[i]);
      den += double(xr[i]) * xr[i];
      if (xr[i] > xr[ax])
        ax = i;
      if (yr[i] > yr[ay])
        ay = i;
    }
    relRms = std::max(relRms, den > 0 ? std::sqrt(num / den) : std::sqrt(num));
    agree += ax == ay;
  }
  top1 = ra.empty() ? 1.0 : double(agree) / ra.size();
  std::string summary =
      llvm::formatv("'{0}' vs '{1}': relative RMS error {2:F4} (limit {3}), "
                    "greedy token agrees on {4:P0} of calls (limit {5:P0})",
                    curName, refName, relRms, maxRelRms, top1, minTop1);
  if (relRms > maxRelRms || top1 < minTop1)
    fail(summary);
  else
    log.push_back(summary);
  return *this;
}

std::vector<std::string> Tester::stageNames() const {
  std::vector<std::string> n;
  for (const Record &r : history)
    n.push_back(r.stage);
  return n;
}

std::string Tester::report() const {
  std::ostringstream os;
  for (const std::string &l : log)
    os << l << "\n";
  return os.str();
}

} // namespace etllm
