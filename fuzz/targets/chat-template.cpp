//===- chat-template.cpp - Fuzz target: chat-template rendering -----------===//
//
// The input is a chat template (the Jinja subset of runtime/llm), then
// optionally the separator line below and a JSON object of the variables
// to render it with (ChatTemplate::renderJson: any JSON values). Without
// the separator the template renders a fixed conversation (system, user,
// assistant, user) as `etllm-run --chat` does (ChatTemplate::render). The
// limits are the defaults with fewer steps and a smaller output, so that a
// slow input shows as a limit error rather than a fuzzer timeout; the
// target checks that every render stays within them, that rendering is
// deterministic, and the end-of-turn marker scan.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "etllm/runtime/llm/chat_template.h"

namespace {

constexpr std::string_view kSeparator = "\n--- context ---\n";

etllm::rt::llm::TemplateLimits fuzzLimits() {
  etllm::rt::llm::TemplateLimits l;
  l.maxSteps = 2'000'000;
  l.maxOutputBytes = 1 << 20;
  return l;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace etllm::rt::llm;
  using etllm::fuzz::note;
  std::string_view input(reinterpret_cast<const char *>(data), size);
  auto parts = etllm::fuzz::split(input, kSeparator, 2);
  const TemplateLimits limits = fuzzLimits();
  (void)endOfTurnMarkers(parts[0]);
  auto tmpl = ChatTemplate::parse(parts[0], "fuzz.jinja", limits);
  if (!tmpl.ok()) {
    note(tmpl.message());
    return 0;
  }
  ETLLM_FUZZ_CHECK(tmpl->source() == parts[0]);
  auto renderOnce = [&](RenderFailure &failure) {
    if (parts.size() == 2)
      return tmpl->renderJson(parts[1], &failure);
    ChatContext ctx;
    ctx.messages = {{"system", "You are brief."},
                    {"user", "Hello <b>there</b> \"friend\"\n"},
                    {"assistant", "Hi."},
                    {"user", "Count to 3."}};
    ctx.bosToken = "<s>";
    ctx.eosToken = "</s>";
    return tmpl->render(ctx, &failure);
  };
  RenderFailure failure = RenderFailure::None;
  auto out = renderOnce(failure);
  if (!out.ok()) {
    note(out.message());
    ETLLM_FUZZ_CHECK(failure != RenderFailure::None);
    ETLLM_FUZZ_CHECK(!out.message().empty());
    return 0;
  }
  note("rendered " + std::to_string(out->size()) + " bytes");
  ETLLM_FUZZ_CHECK(failure == RenderFailure::None);
  ETLLM_FUZZ_CHECK(out->size() <= limits.maxOutputBytes);
  // Deterministic (strftime_now aside: a template that calls it may differ
  // across a second boundary, so only the size-independent parts compare).
  if (parts[0].find("strftime_now") == std::string_view::npos) {
    RenderFailure again = RenderFailure::None;
    auto out2 = renderOnce(again);
    ETLLM_FUZZ_CHECK(out2.ok() && *out2 == *out);
  }
  return 0;
}
