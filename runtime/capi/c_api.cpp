//===- c_api.cpp - The etllm runtime's C API ------------------------------===//
//
// extern "C" wrappers over llm::Runner. Nothing thrown escapes: every entry
// point catches and turns failures into a status and etllm_last_error().
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/c_api.h"

#include "etllm/runtime/backend.h"
#ifdef ETLLM_C_IMAGES
#include "etllm/runtime/image/preprocess.h"
#endif
#include "etllm/runtime/llm/chat.h"
#include "etllm/runtime/llm/runner.h"
#include "etllm/runtime/lora.h"
#include "etllm/runtime/program.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <thread>

using namespace etllm::rt;

struct etllm_runner {
  std::unique_ptr<llm::Runner> runner;
  llm::Stats stats;
  bool haveStats = false;
};

struct etllm_chat {
  etllm_runner *runner = nullptr;
  std::unique_ptr<llm::ChatSession> session;
};

struct etllm_lora {
  etllm_runner *runner = nullptr;
  std::shared_ptr<const LoraAdapter> adapter;
  bool applied = false;
};

namespace {

thread_local std::string lastError;

etllm_status failWith(etllm_status status, std::string message) {
  lastError = std::move(message);
  return status;
}

template <typename F> etllm_status guarded(F &&f) {
  try {
    lastError.clear();
    return f();
  } catch (const std::bad_alloc &) {
    return failWith(ETLLM_ERROR, "out of memory");
  } catch (const std::exception &e) {
    return failWith(ETLLM_ERROR, std::string("internal error: ") + e.what());
  } catch (...) {
    return failWith(ETLLM_ERROR, "internal error");
  }
}

/// guarded for a constructor: `make(obj)` fills a new T and returns ETLLM_OK,
/// or fails. The object, or NULL (and the error) on failure.
template <typename T, typename F> T *guardedNew(F &&make) {
  T *out = nullptr;
  guarded([&] {
    std::unique_ptr<T> obj(new T());
    const etllm_status st = make(*obj);
    if (st == ETLLM_OK)
      out = obj.release();
    return st;
  });
  return out;
}

etllm_status toConfig(const etllm_generation_config *config,
                      llm::GenerationConfig &gc) {
  if (!config)
    return ETLLM_OK;
  if (config->struct_size < sizeof(etllm_generation_config))
    return failWith(ETLLM_INVALID_ARGUMENT,
                    "config->struct_size is too small (use "
                    "etllm_generation_config_init)");
  gc.maxNewTokens = config->max_new_tokens;
  gc.sampling.temperature = config->temperature;
  gc.sampling.topK = config->top_k;
  gc.sampling.topP = config->top_p;
  gc.sampling.minP = config->min_p;
  gc.sampling.repetitionPenalty = config->repetition_penalty;
  gc.sampling.seed = config->seed;
  gc.addBos = config->add_bos != 0;
  // The runtime's one check of every number (NaN, infinity, ranges).
  Status valid = llm::validate(gc);
  if (!valid.ok())
    return failWith(ETLLM_INVALID_ARGUMENT, valid.message());
  return ETLLM_OK;
}

/// Streams to a C callback; a non-zero return sets `stop`.
std::function<void(const std::string &)>
textSink(etllm_text_callback onText, void *userData, std::atomic<bool> &stop) {
  return [=, &stop](const std::string &s) {
    if (onText && !stop.load() && onText(s.data(), s.size(), userData))
      stop.store(true);
  };
}

} // namespace

extern "C" {

void etllm_runner_options_init(etllm_runner_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

void etllm_generation_config_init(etllm_generation_config *config) {
  if (!config)
    return;
  std::memset(config, 0, sizeof *config);
  config->struct_size = sizeof *config;
  llm::GenerationConfig d;
  config->max_new_tokens = d.maxNewTokens;
  config->temperature = d.sampling.temperature;
  config->top_k = d.sampling.topK;
  config->top_p = d.sampling.topP;
  config->min_p = d.sampling.minP;
  config->repetition_penalty = d.sampling.repetitionPenalty;
  config->seed = 0;
  config->add_bos = d.addBos ? 1 : 0;
}

etllm_runner *etllm_runner_create(const char *program_path,
                                  const etllm_runner_options *options) {
  return guardedNew<etllm_runner>([&](etllm_runner &r) {
    if (!program_path)
      return failWith(ETLLM_INVALID_ARGUMENT, "program_path is NULL");
    // Version 1 of the struct ends before max_memory.
    constexpr size_t kOptionsV1 = offsetof(etllm_runner_options, max_memory);
    if (options && options->struct_size < kOptionsV1)
      return failWith(ETLLM_INVALID_ARGUMENT,
                      "options->struct_size is too small (use "
                      "etllm_runner_options_init)");
    llm::RunnerOptions ro;
    ro.numThreads = hardwareThreads();
    if (options) {
      if (options->num_threads != 0) {
        Status st = checkThreads("num_threads", options->num_threads);
        if (!st.ok())
          return failWith(ETLLM_INVALID_ARGUMENT, st.message());
      }
      if (options->num_threads > 0)
        ro.numThreads = size_t(options->num_threads);
      if (options->tokenizer_path)
        ro.tokenizerPath = options->tokenizer_path;
      if (options->struct_size >= offsetof(etllm_runner_options, max_memory) +
                                      sizeof options->max_memory)
        ro.maxMemory = options->max_memory;
    }
    registerBuiltinBackends();
    auto runner = llm::Runner::load(program_path, ro);
    if (!runner.ok())
      return failWith(ETLLM_ERROR, runner.message());
    r.runner = std::move(runner.value());
    return ETLLM_OK;
  });
}

/// The images at `paths` as the runner's program preprocesses them.
static etllm_status loadImages(llm::Runner &runner, const char *const *paths,
                        size_t count, std::vector<llm::ImagePixels> &out) {
  if (count == 0)
    return ETLLM_OK;
  if (!paths)
    return failWith(ETLLM_INVALID_ARGUMENT, "image_paths is NULL");
#ifdef ETLLM_C_IMAGES
  const llm::VisionMethods *vision = runner.vision();
  if (!vision)
    return failWith(ETLLM_ERROR,
                    llm::noVisionEncoder(runner.program().name()).message());
  for (size_t i = 0; i < count; ++i) {
    if (!paths[i])
      return failWith(ETLLM_INVALID_ARGUMENT, "an image path is NULL");
    image::Pixels px;
    if (Status st = image::loadForModel(
            paths[i], vision->preprocessorJson(),
            runner.program().name() + " (image_preprocessor)", px);
        !st.ok())
      return failWith(ETLLM_ERROR, st.message());
    out.push_back({px.height, px.width, std::move(px.chw), px.rows, px.cols,
                   std::move(px.tiles)});
  }
  return ETLLM_OK;
#else
  (void)runner;
  return failWith(ETLLM_ERROR,
                  "images: this runtime was built without libpng/libjpeg");
#endif
}

etllm_status etllm_runner_generate(etllm_runner *runner, const char *prompt,
                                   const etllm_generation_config *config,
                                   etllm_text_callback on_text,
                                   void *user_data) {
  return etllm_runner_generate_with_images(runner, prompt, nullptr, 0, config,
                                           on_text, user_data);
}

etllm_status etllm_runner_generate_with_images(
    etllm_runner *runner, const char *prompt, const char *const *image_paths,
    size_t num_images, const etllm_generation_config *config,
    etllm_text_callback on_text, void *user_data) {
  return guarded([&] {
    if (!runner || !prompt)
      return failWith(ETLLM_INVALID_ARGUMENT, "runner or prompt is NULL");
    llm::GenerationConfig gc;
    if (etllm_status st = toConfig(config, gc); st != ETLLM_OK)
      return st;
    std::vector<llm::ImagePixels> images;
    if (etllm_status st =
            loadImages(*runner->runner, image_paths, num_images, images);
        st != ETLLM_OK)
      return st;
    std::atomic<bool> stop{false};
    gc.cancel = &stop;
    auto stats = runner->runner->generate(
        prompt, images, gc, [&](const std::string &s) {
          if (on_text && !stop.load() && on_text(s.data(), s.size(), user_data))
            stop.store(true);
        });
    if (!stats.ok())
      return failWith(ETLLM_ERROR, stats.message());
    runner->stats = *stats;
    runner->haveStats = true;
    return ETLLM_OK;
  });
}

etllm_status etllm_runner_stats(const etllm_runner *runner,
                                etllm_stats *stats) {
  return guarded([&] {
    if (!runner || !stats)
      return failWith(ETLLM_INVALID_ARGUMENT, "runner or stats is NULL");
    if (!runner->haveStats)
      return failWith(ETLLM_ERROR, "no generation has run yet");
    const llm::Stats &s = runner->stats;
    std::memset(stats, 0, sizeof *stats);
    stats->struct_size = sizeof *stats;
    stats->load_ms = s.loadMs;
    stats->ttft_ms = s.ttftMs;
    stats->prefill_ms = s.prefillMs;
    stats->decode_ms = s.decodeMs;
    stats->sampling_ms = s.samplingMs;
    stats->prompt_tokens = s.promptTokens;
    stats->generated_tokens = s.generatedTokens;
    stats->prefill_tokens_per_second = s.prefillTokensPerSecond();
    stats->decode_tokens_per_second = s.decodeTokensPerSecond();
    stats->peak_rss_bytes = s.peakRssBytes;
    std::strncpy(stats->stop_reason, s.stopReason.c_str(),
                 sizeof stats->stop_reason - 1);
    stats->cached_tokens = s.cachedTokens;
    stats->context_tokens = s.contextTokens;
    return ETLLM_OK;
  });
}

etllm_status etllm_runner_image_stats(const etllm_runner *runner,
                                      int64_t *images, double *encode_ms) {
  return guarded([&] {
    if (!runner || !images || !encode_ms)
      return failWith(ETLLM_INVALID_ARGUMENT,
                      "runner, images or encode_ms is NULL");
    if (!runner->haveStats)
      return failWith(ETLLM_ERROR, "no generation has run yet");
    *images = runner->stats.images;
    *encode_ms = runner->stats.imageEncodeMs;
    return ETLLM_OK;
  });
}

int64_t etllm_runner_context_length(const etllm_runner *runner) {
  return runner ? runner->runner->maxSeqLen() : 0;
}

void etllm_runner_destroy(etllm_runner *runner) { delete runner; }

etllm_lora *etllm_lora_load(etllm_runner *runner, const char *path) {
  return guardedNew<etllm_lora>([&](etllm_lora &l) {
    if (!runner || !path)
      return failWith(ETLLM_INVALID_ARGUMENT, "runner or path is NULL");
    auto adapter = LoraAdapter::load(path, runner->runner->program());
    if (!adapter.ok())
      return failWith(ETLLM_ERROR, adapter.message());
    l.runner = runner;
    l.adapter = std::move(adapter.value());
    return ETLLM_OK;
  });
}

etllm_status etllm_lora_apply(etllm_lora *lora, float scale) {
  return guarded([&] {
    if (!lora)
      return failWith(ETLLM_INVALID_ARGUMENT, "lora is NULL");
    Module &module = lora->runner->runner->module();
    Status st = lora->applied ? module.setLoraScale(*lora->adapter, scale)
                              : module.applyLora(lora->adapter, scale);
    if (!st.ok()) // Module checks the scale: a NaN is the caller's value
      return failWith(std::isfinite(scale) ? ETLLM_ERROR
                                           : ETLLM_INVALID_ARGUMENT,
                      st.message());
    lora->applied = true;
    lora->runner->runner->resetCache();
    return ETLLM_OK;
  });
}

etllm_status etllm_lora_remove(etllm_lora *lora) {
  return guarded([&] {
    if (!lora)
      return failWith(ETLLM_INVALID_ARGUMENT, "lora is NULL");
    if (!lora->applied)
      return failWith(ETLLM_ERROR,
                      lora->adapter->name() + ": the adapter is not applied");
    Status st = lora->runner->runner->module().removeLora(*lora->adapter);
    if (!st.ok())
      return failWith(ETLLM_ERROR, st.message());
    lora->applied = false;
    lora->runner->runner->resetCache();
    return ETLLM_OK;
  });
}

void etllm_lora_destroy(etllm_lora *lora) {
  if (lora && lora->applied)
    etllm_lora_remove(lora);
  delete lora;
}

etllm_chat *etllm_chat_create(etllm_runner *runner, const char *system_prompt) {
  return guardedNew<etllm_chat>([&](etllm_chat &c) {
    if (!runner)
      return failWith(ETLLM_INVALID_ARGUMENT, "runner is NULL");
    llm::ChatOptions options;
    if (system_prompt)
      options.systemPrompt = system_prompt;
    auto session = llm::ChatSession::create(*runner->runner, options);
    if (!session.ok())
      return failWith(ETLLM_ERROR, session.message());
    c.runner = runner;
    c.session = std::move(session.value());
    return ETLLM_OK;
  });
}

etllm_status etllm_chat_send(etllm_chat *chat, const char *user_message,
                             const etllm_generation_config *config,
                             etllm_text_callback on_text, void *user_data) {
  return etllm_chat_send_with_images(chat, user_message, nullptr, 0, config,
                                     on_text, user_data);
}

etllm_status etllm_chat_send_with_images(
    etllm_chat *chat, const char *user_message, const char *const *image_paths,
    size_t num_images, const etllm_generation_config *config,
    etllm_text_callback on_text, void *user_data) {
  return guarded([&] {
    if (!chat || !user_message)
      return failWith(ETLLM_INVALID_ARGUMENT, "chat or user_message is NULL");
    llm::GenerationConfig gc;
    gc.maxNewTokens = 1024;
    if (etllm_status st = toConfig(config, gc); st != ETLLM_OK)
      return st;
    std::vector<llm::ImagePixels> images;
    if (etllm_status st = loadImages(*chat->runner->runner, image_paths,
                                     num_images, images);
        st != ETLLM_OK)
      return st;
    std::atomic<bool> stop{false};
    gc.cancel = &stop;
    auto turn = chat->session->send(user_message, images, gc,
                                    textSink(on_text, user_data, stop));
    if (!turn.ok())
      return failWith(ETLLM_ERROR, turn.message());
    chat->runner->stats = turn->stats;
    chat->runner->haveStats = true;
    return ETLLM_OK;
  });
}

void etllm_chat_reset(etllm_chat *chat) {
  if (chat)
    guarded([&] {
      chat->session->reset();
      return ETLLM_OK;
    });
}

void etllm_chat_destroy(etllm_chat *chat) { delete chat; }

const char *etllm_last_error(void) { return lastError.c_str(); }

const char *etllm_version(void) { return ETLLM_VERSION; }

} // extern "C"
