// An app on the installed etllm runtime: load a program, generate text.
//   generate MODEL.pte "Once upon a time"
#include <etllm/runtime/backend.h>
#include <etllm/runtime/llm/runner.h>

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODEL.pte PROMPT\n", argv[0]);
    return 2;
  }
  etllm::rt::registerBuiltinBackends(); // the cpu delegate
  auto runner = etllm::rt::llm::Runner::load(argv[1], {});
  if (!runner.ok()) {
    std::fprintf(stderr, "error: %s\n", runner.message().c_str());
    return 1;
  }
  etllm::rt::llm::GenerationConfig config;
  config.maxNewTokens = 48;
  config.sampling.temperature = 0; // greedy: the same text every run
  std::printf("%s", argv[2]);
  auto stats = (*runner)->generate(argv[2], config, [](const std::string &s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
  });
  std::printf("\n");
  if (!stats.ok()) {
    std::fprintf(stderr, "error: %s\n", stats.message().c_str());
    return 1;
  }
  std::fprintf(stderr, "%lld tokens at %.0f tokens/s\n",
               (long long)stats->generatedTokens,
               stats->decodeTokensPerSecond());
  return 0;
}
