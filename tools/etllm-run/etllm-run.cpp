//===- etllm-run.cpp - Generate text with a program file ------------------===//
//
//   etllm-run MODEL.pte --prompt TEXT [options]     one completion
//   etllm-run MODEL.pte --chat [--system TEXT]      an interactive chat
//
// Completion: stdout carries the prompt, the generated text and one final
// newline; everything else goes to stderr.
//
// Chat: each line read from stdin is a user message; the reply streams to
// stdout, followed by a newline. The conversation is rendered with the
// model's chat template and the KV cache is kept across turns, so a turn
// prefills only its new tokens. Ctrl-C stops a reply (the chat goes on);
// at the prompt, Ctrl-C clears the line and a second one on an empty line
// leaves, as do Ctrl-D and /quit. /reset starts a new conversation.
//
// Part of the runtime: no LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/backend.h"
#include "etllm/runtime/flags.h"
#ifdef ETLLM_RUN_IMAGES
#include "etllm/runtime/image/preprocess.h"
#endif
#include "etllm/runtime/llm/chat.h"
#include "etllm/runtime/llm/runner.h"
#include "etllm/runtime/lora.h"
#include "etllm/runtime/plugin.h"
#include "etllm/runtime/profile.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

using namespace etllm::rt;

namespace {

void usage() {
  std::fprintf(
      stderr,
      "usage: etllm-run MODEL.pte --prompt TEXT [options]\n"
      "       etllm-run MODEL.pte --chat [--system TEXT] [options]\n"
      "  --prompt TEXT           text to continue (required without --chat)\n"
      "  --image FILE            a PNG or JPEG for a composite model (LLaVA),\n"
      "                          at the prompt's next <image> or, without one,\n"
      "                          before the text; with --chat, in the first\n"
      "                          message (/image FILE adds one to the next)\n"
      "                          (repeatable; default: none)\n"
      "  --chat                  interactive chat with the model's chat "
      "template\n"
      "                          (default: off)\n"
      "  --system TEXT           system message that starts the chat "
      "(default: none)\n"
      "  --chat-template FILE    chat template to use instead of the "
      "program's\n"
      "                          (default: the program's)\n"
      "  --no-kv-reuse           prefill the whole conversation every turn "
      "(default:\n"
      "                          keep the KV cache, prefill only new tokens)\n"
      "  --tokenizer PATH        tokenizer file (default: the program's own)\n"
      "  --lora FILE[:SCALE]     apply a LoRA adapter file "
      "(etllm-export-lora)\n"
      "                          with SCALE (default 1); repeatable, the\n"
      "                          adapters add up (default: none)\n"
      "  -n, --max-new-tokens N  tokens to generate at most (default 128; "
      "1024 per\n"
      "                          reply with --chat)\n"
      "  --temperature T         0 = greedy (default 0.8)\n"
      "  --top-k K               keep the K most likely tokens (default 0 = "
      "off)\n"
      "  --top-p P               nucleus sampling (default 0.9)\n"
      "  --min-p P               drop tokens below P x the best (default 0 = "
      "off)\n"
      "  --repetition-penalty R  > 1 discourages repeats (default 1)\n"
      "  --seed S                random seed (default: the time)\n"
      "  --stop STRING           stop when the text contains STRING "
      "(repeatable;\n"
      "                          default: none)\n"
      "  --no-context-shift      stop when the context (max_seq_len) is full\n"
      "                          (default: shift it and go on: the first\n"
      "                          --keep tokens stay, the older half of the\n"
      "                          rest is dropped and the kept tokens are\n"
      "                          prefilled again)\n"
      "  --keep N                tokens kept at the start when the context\n"
      "                          shifts (attention sinks; default 4)\n"
      "  --no-bos                do not prepend BOS to the prompt (default: "
      "prepend)\n"
      "  --threads N             kernel threads, at most the machine's "
      "(default: hardware threads)\n"
      "  --max-memory SIZE       refuse a program that plans more memory "
      "(bytes, or\n"
      "                          512M, 2G...; default: the physical memory)\n"
      "  --stats-json            print statistics as one JSON line on stderr "
      "(per\n"
      "                          reply with --chat) (default: off)\n"
      "  --verbose-prompt        with --chat, print on stderr the conversation\n"
      "                          as the template rendered it for each reply\n"
      "                          (\"etllm-run: prompt of turn N (B bytes):\",\n"
      "                          the B bytes, a newline) (default: off)\n"
      "  --profile               print the time per operator of every call "
      "of the\n"
      "                          program (prefill and decode) on stderr at "
      "exit\n"
      "                          (default: off)\n"
      "  --plugin FILE           load an out-of-tree backend's runtime half "
      "from this\n"
      "                          shared library (repeatable; "
      "etllm/runtime/plugin.h;\n"
      "                          default: none)\n"
      "  -h, --help              this help\n");
}

int fail(const std::string &message) {
  std::fprintf(stderr, "etllm-run: error: %s\n", message.c_str());
  return 1;
}

std::atomic<bool> interrupted{false};
extern "C" void onSigint(int) { interrupted.store(true); }

/// Reads one line from stdin (without the newline). False at end of input
/// or when Ctrl-C interrupted the read (then `interrupted` is set).
bool readLine(std::string &line) {
  line.clear();
  while (true) {
    char c;
    ssize_t n = ::read(0, &c, 1);
    if (n == 1) {
      if (c == '\n')
        return true;
      line += c;
      continue;
    }
    if (n < 0 && errno == EINTR) {
      if (interrupted.load())
        return false;
      continue;
    }
    return !line.empty(); // EOF: a last line without newline still counts
  }
}

void writeOut(const std::string &s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

/// An image file as the program's image processor makes it (a composite
/// model's program; the caller checked runner.vision()).
Result<llm::ImagePixels> loadImage(llm::Runner &runner,
                                   const std::string &path) {
#ifdef ETLLM_RUN_IMAGES
  image::Pixels px;
  if (Status st = image::loadForModel(
          path, runner.vision()->preprocessorJson(),
          runner.program().name() + " (image_preprocessor)", px);
      !st.ok())
    return Error(st.message());
  return llm::ImagePixels{px.height, px.width, std::move(px.chw),
                          px.rows,   px.cols,  std::move(px.tiles)};
#else
  (void)runner;
  return Error(path + ": this etllm-run was built without libpng/libjpeg");
#endif
}

int chat(llm::Runner &runner, const llm::ChatOptions &options,
         llm::GenerationConfig config, bool statsJson, bool verbosePrompt,
         std::vector<llm::ImagePixels> images) {
  auto session = llm::ChatSession::create(runner, options);
  if (!session.ok())
    return fail(session.message());
  // Ctrl-C interrupts (no SA_RESTART, so a blocked read returns).
  struct sigaction sa {};
  sa.sa_handler = onSigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  config.cancel = &interrupted;
  bool tty = isatty(0);
  std::fprintf(stderr,
               "etllm-run: chat (context %lld tokens). /reset starts over, "
               "/quit or Ctrl-D leaves, Ctrl-C stops a reply.\n",
               (long long)runner.maxSeqLen());
  if (runner.vision())
    std::fprintf(stderr, "etllm-run: /image FILE adds an image to your next "
                         "message (at its <image>, or first).\n");
  bool lastWasInterrupt = false;
  uint64_t seed = config.sampling.seed;
  while (true) {
    if (tty)
      writeOut("> ");
    std::string line;
    interrupted.store(false);
    if (!readLine(line)) {
      if (interrupted.load()) {
        writeOut("\n");
        if (lastWasInterrupt)
          return 0;
        std::fprintf(stderr, "etllm-run: (Ctrl-C again, Ctrl-D or /quit "
                             "leaves)\n");
        lastWasInterrupt = true;
        continue;
      }
      if (tty)
        writeOut("\n");
      return 0; // end of input
    }
    lastWasInterrupt = false;
    if (line == "/quit" || line == "/exit")
      return 0;
    if (line == "/reset") {
      (*session)->reset();
      std::fprintf(stderr, "etllm-run: new conversation\n");
      continue;
    }
    if (line.rfind("/image ", 0) == 0) {
      if (!runner.vision()) {
        std::fprintf(stderr, "etllm-run: %s\n",
                     llm::noVisionEncoder(runner.program().name())
                         .message()
                         .c_str());
        continue;
      }
      auto px = loadImage(runner, line.substr(7));
      if (!px.ok()) {
        std::fprintf(stderr, "etllm-run: %s\n", px.message().c_str());
        continue;
      }
      images.push_back(std::move(*px));
      std::fprintf(stderr, "etllm-run: %zu image(s) for the next message\n",
                   images.size());
      continue;
    }
    if (line.empty())
      continue;
    config.sampling.seed = seed++;
    auto turn = (*session)->send(line, images, config, writeOut);
    images.clear();
    if (!turn.ok()) {
      std::fprintf(stderr, "etllm-run: %s\n", turn.message().c_str());
      continue;
    }
    writeOut("\n");
    const std::string &why = turn->stats.stopReason;
    if (why == "interrupted")
      std::fprintf(stderr, "etllm-run: reply interrupted\n");
    else if (why == "context")
      std::fprintf(stderr,
                   "etllm-run: the context is full (%lld tokens, the "
                   "program's max_seq_len): the reply was cut; /reset "
                   "starts a new conversation\n",
                   (long long)runner.maxSeqLen());
    if (turn->stats.contextShifts > 0)
      std::fprintf(stderr,
                   "etllm-run: note: the context was full; it shifted %lld "
                   "times (the start of the chat and its latest part are "
                   "kept, the rest is forgotten)\n",
                   (long long)turn->stats.contextShifts);
    if (turn->reprefilled)
      std::fprintf(stderr,
                   "etllm-run: note: the template rendered earlier turns "
                   "differently; %lld tokens were prefilled again\n",
                   (long long)turn->stats.promptTokens);
    if (verbosePrompt) {
      std::fprintf(stderr, "etllm-run: prompt of turn %lld (%zu bytes):\n",
                   (long long)turn->turn, turn->prompt.size());
      std::fwrite(turn->prompt.data(), 1, turn->prompt.size(), stderr);
      std::fputc('\n', stderr);
    }
    if (statsJson)
      std::fprintf(stderr, "%s\n", turn->toJson().c_str());
  }
}

bool readFile(const std::string &path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::string model, prompt, templatePath;
  std::vector<std::pair<std::string, double>> loras; // --lora FILE[:SCALE]
  std::vector<std::string> imagePaths;
  bool havePrompt = false, statsJson = false, chatMode = false,
       verbosePrompt = false,
       haveMaxNew = false, profiled = false;
  llm::RunnerOptions options;
  options.numThreads = hardwareThreads();
  llm::GenerationConfig config;
  config.shiftContext = true; // etllm-run keeps going when the context fills
  llm::ChatOptions chatOptions;
  config.sampling.seed =
      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  std::vector<std::string> plugins;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    // Every number goes through the runtime's one flag parser (flags.h),
    // with the ranges the runtime itself enforces (llm::limits).
    auto text = [&]() -> const char * {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    std::string err;
    auto number = [&](const NumberRange &range, double &out) {
      Result<double> r = parseNumber(a, text(), range);
      if (!r.ok()) {
        err = r.message();
        return false;
      }
      out = *r;
      return true;
    };
    double v;
    if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (a == "--prompt" && i + 1 < argc) {
      prompt = argv[++i];
      havePrompt = true;
    } else if (a == "--image") {
      if (i + 1 >= argc)
        return fail("--image: the file is missing");
      imagePaths.push_back(argv[++i]);
    } else if (a == "--chat") {
      chatMode = true;
    } else if (a == "--system" && i + 1 < argc) {
      chatOptions.systemPrompt = argv[++i];
    } else if (a == "--no-kv-reuse") {
      chatOptions.reuseKvCache = false;
    } else if (a == "--chat-template" && i + 1 < argc) {
      templatePath = argv[++i];
    } else if (a == "--lora") {
      if (i + 1 >= argc)
        return fail("--lora: the value is missing");
      auto spec = parsePathAndScale("--lora", argv[++i]);
      if (!spec.ok())
        return fail(spec.message());
      loras.push_back(*spec);
    } else if (a == "--tokenizer" && i + 1 < argc) {
      options.tokenizerPath = argv[++i];
    } else if (a == "--stop" && i + 1 < argc) {
      config.stopStrings.push_back(argv[++i]);
    } else if (a == "-n" || a == "--max-new-tokens") {
      if (!number(llm::limits::kMaxNewTokens, v))
        return fail(err);
      config.maxNewTokens = int32_t(v);
      haveMaxNew = true;
    } else if (a == "--temperature") {
      if (!number(llm::limits::kTemperature, v))
        return fail(err);
      config.sampling.temperature = float(v);
    } else if (a == "--top-k") {
      if (!number(llm::limits::kTopK, v))
        return fail(err);
      config.sampling.topK = int32_t(v);
    } else if (a == "--top-p") {
      if (!number(llm::limits::kTopP, v))
        return fail(err);
      config.sampling.topP = float(v);
    } else if (a == "--min-p") {
      if (!number(llm::limits::kMinP, v))
        return fail(err);
      config.sampling.minP = float(v);
    } else if (a == "--repetition-penalty") {
      if (!number(llm::limits::kRepetitionPenalty, v))
        return fail(err);
      config.sampling.repetitionPenalty = float(v);
    } else if (a == "--no-context-shift") {
      config.shiftContext = false;
    } else if (a == "--keep") {
      if (!number(llm::limits::kSinkTokens, v))
        return fail(err);
      config.sinkTokens = int32_t(v);
    } else if (a == "--seed") {
      Result<uint64_t> seed = parseUnsigned(a, text());
      if (!seed.ok())
        return fail(seed.message());
      config.sampling.seed = *seed;
    } else if (a == "--plugin") {
      const char *file = text();
      if (!file)
        return fail("--plugin: needs a file");
      plugins.push_back(file);
    } else if (a == "--threads") {
      Result<size_t> threads = parseThreads(a, text());
      if (!threads.ok())
        return fail(threads.message());
      options.numThreads = *threads;
    } else if (a == "--max-memory") {
      Result<uint64_t> bytes = parseByteSize(a, text());
      if (!bytes.ok())
        return fail(bytes.message());
      if (*bytes == 0)
        return fail("--max-memory: 0 is out of range (at least 1 byte)");
      options.maxMemory = *bytes;
    } else if (a == "--no-bos") {
      config.addBos = false;
    } else if (a == "--stats-json") {
      statsJson = true;
    } else if (a == "--verbose-prompt") {
      verbosePrompt = true;
    } else if (a == "--profile") {
      profiled = true;
    } else if (!a.empty() && a[0] == '-') {
      usage();
      return fail("unknown or incomplete option '" + a + "'");
    } else if (model.empty()) {
      model = a;
    } else {
      return fail("unexpected argument '" + a + "'");
    }
  }
  if (model.empty() || (!havePrompt && !chatMode)) {
    usage();
    return fail(model.empty() ? "no model file given"
                              : "--prompt (or --chat) is required");
  }
#ifndef ETLLM_RUN_IMAGES
  if (!imagePaths.empty())
    return fail("--image: this etllm-run was built without libpng/libjpeg");
#endif
  if (chatMode && havePrompt)
    return fail("--prompt and --chat exclude each other");
  if (!chatMode && (!chatOptions.systemPrompt.empty() ||
                    !templatePath.empty() || !chatOptions.reuseKvCache))
    return fail("--system, --chat-template and --no-kv-reuse need --chat");
  if (!templatePath.empty() &&
      !readFile(templatePath, chatOptions.templateSource))
    return fail("--chat-template: cannot read '" + templatePath + "'");
  if (chatMode && !haveMaxNew)
    config.maxNewTokens = 1024;

  registerBuiltinBackends();
  for (const std::string &plugin : plugins)
    if (Status st = loadBackendPlugin(plugin); !st.ok())
      return fail(st.message());
  auto runner = llm::Runner::load(model, options);
  if (!runner.ok())
    return fail(runner.message());
  for (const auto &[path, scale] : loras) {
    auto adapter = LoraAdapter::load(path, (*runner)->program());
    if (!adapter.ok())
      return fail(adapter.message());
    if (Status st = (*runner)->module().applyLora(*adapter, scale); !st.ok())
      return fail(st.message());
  }
  // --profile: every execution of the program from here on (profile.h).
  OpProfile profile;
  if (profiled)
    (*runner)->module().context().setProfile(&profile);
  auto printProfile = [&] {
    if (profiled)
      std::fprintf(stderr, "etllm-run: profile of %llu executions\n%s",
                   static_cast<unsigned long long>(profile.executions()),
                   profile.table().c_str());
  };
  if (!imagePaths.empty() && !(*runner)->vision())
    return fail(llm::noVisionEncoder(model, "--image: ").message());
  std::vector<llm::ImagePixels> images;
  for (const std::string &path : imagePaths) {
    auto px = loadImage(**runner, path);
    if (!px.ok())
      return fail(px.message());
    images.push_back(std::move(*px));
  }
  if (chatMode) {
    const int rc = chat(**runner, chatOptions, config, statsJson,
                        verbosePrompt, std::move(images));
    printProfile();
    return rc;
  }

  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
  auto stats = (*runner)->generate(prompt, images, config,
                                   [](const std::string &s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!stats.ok())
    return fail(stats.message());
  printProfile();
  if (statsJson)
    std::fprintf(stderr, "%s\n", stats->toJson().c_str());
  else
    std::fprintf(stderr,
                 "etllm-run: %lld prompt tokens, %lld generated (%s); load "
                 "%.1f ms, first token %.1f ms, prefill %.1f tok/s, decode "
                 "%.1f tok/s, peak RSS %.1f MiB\n",
                 (long long)stats->promptTokens,
                 (long long)stats->generatedTokens, stats->stopReason.c_str(),
                 stats->loadMs, stats->ttftMs, stats->prefillTokensPerSecond(),
                 stats->decodeTokensPerSecond(),
                 stats->peakRssBytes / 1048576.0);
  if (!statsJson && stats->contextShifts > 0)
    std::fprintf(stderr,
                 "etllm-run: the context (%lld tokens) was full %lld times "
                 "and shifted (%.1f ms of prefill again); --no-context-shift "
                 "stops instead\n",
                 (long long)(*runner)->maxSeqLen(), (long long)stats->contextShifts,
                 stats->shiftMs);
  return 0;
}
