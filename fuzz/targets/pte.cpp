//===- pte.cpp - Fuzz target: program file load, verify, one forward call -===//
//
// Program::loadFromBuffer (header, flatbuffers Verifier, semantic checks);
// when it verifies: the readable dump, the embedded tokenizer, and one call
// of `forward` with the smallest inputs its signature allows (dynamic
// dimensions 1, values 0), on portable kernels and the built-in backends.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "etllm/runtime/backend.h"
#include "etllm/runtime/llm/runner.h"
#include "etllm/runtime/llm/static_methods.h"
#include "etllm/runtime/llm/vision_methods.h"
#include "etllm/runtime/program.h"
#include "etllm/schema/program_generated.h"

#include <algorithm>
#include <vector>

using namespace etllm::rt;

namespace {

/// The memory budget of a fuzzed program's Module (the runtime's own check,
/// ModuleOptions::maxMemory, refuses more before allocating).
constexpr uint64_t kMaxFuzzMemory = 64ull << 20;

const etllm::schema::Method *schemaMethod(const Program &p,
                                          const std::string &name) {
  if (!p.schema().methods())
    return nullptr;
  for (const auto *m : *p.schema().methods())
    if (m->name() && m->name()->str() == name)
      return m;
  return nullptr;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registerBuiltinBackends();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using etllm::fuzz::note;
  auto program = Program::loadFromBuffer(data, size, "fuzz.pte");
  if (!program.ok()) {
    note(program.message());
    return 0;
  }
  (void)dumpProgram(**program);
  if (auto tok = llm::tokenizerForProgram(**program); tok.ok()) {
    auto ids = (*tok)->encode("Once upon a time", true);
    if (ids.ok())
      (void)(*tok)->decode(*ids);
  }
  ModuleOptions options;
  options.maxMemory = kMaxFuzzMemory;
  auto module = Module::create(*program, options);
  if (!module.ok()) {
    note(module.message());
    return 0;
  }
  // A static program: its methods checked as the runner checks them, then a
  // prompt of 3 tokens (a padded prefill chunk, or decode steps) and one
  // generated token, as the runner feeds them.
  auto statics = llm::StaticMethods::open(
      **module, "fuzz.pte", (*program)->metadata().contextLimit());
  if (!statics.ok()) {
    note(statics.message());
    return 0;
  }
  if (*statics) {
    auto logits = (*statics)->forward({1, 2, 3}, 0);
    if (logits.ok())
      logits = (*statics)->forward({4}, 3);
    note(logits.ok() ? "executed prefill and decode" : logits.message());
    return 0;
  }
  auto method = (*module)->method("forward");
  if (!method.ok()) {
    note(method.message());
    return 0;
  }
  const etllm::schema::Method *sm = schemaMethod(**program, "forward");
  Method &m = **method;
  for (size_t i = 0; i < m.numInputs(); ++i) {
    const Tensor &t = m.input(i);
    std::vector<int64_t> sizes(t.sizes, t.sizes + t.rank);
    // Dynamic dimensions (the sequence) at their smallest useful size.
    const etllm::schema::Tensor *st =
        sm && sm->inputs() && i < sm->inputs()->size() && sm->values() &&
                sm->inputs()->Get(i) < sm->values()->size()
            ? sm->values()->Get(sm->inputs()->Get(i))
            : nullptr;
    if (st && st->dynamic_dims())
      for (size_t d = 0; d < sizes.size() && d < st->dynamic_dims()->size();
           ++d)
        if (st->dynamic_dims()->Get(d))
          sizes[d] = std::min<int64_t>(sizes[d], 1);
    int64_t n = 1;
    for (int64_t s : sizes)
      n *= s;
    if (n < 0 || n > (1 << 20))
      return 0;
    std::vector<uint8_t> zeros(
        std::max<size_t>(static_cast<size_t>(n) * 8, t.capacity) + 64, 0);
    if (Status st = m.setInput(i, t.dtype, sizes.data(), t.rank, zeros.data());
        !st.ok()) {
      note(st.message());
      return 0;
    }
  }
  Status st = m.execute();
  note(st.ok() ? "executed forward" : st.message());
  if (!st.ok() || m.numOutputs() != 1 || m.output(0).rank < 1)
    return 0;
  // A composite model's image methods, checked as the runner checks them,
  // then one image of zero pixels fed after the token.
  auto vision =
      llm::VisionMethods::open(**module, "fuzz.pte", m.output(0).dim(-1));
  if (!vision.ok()) {
    note(vision.message());
    return 0;
  }
  if (*vision) {
    const int64_t s = (*vision)->imageSize();
    if (s > 512)
      return 0;
    llm::ImagePixels px;
    px.height = px.width = s;
    px.chw.assign(size_t(3 * s * s), 0.0f);
    auto logits = (*vision)->prefill(px, 1, nullptr);
    note(logits.ok() ? "executed vision_encoder and text_decoder"
                     : logits.message());
  }
  return 0;
}
