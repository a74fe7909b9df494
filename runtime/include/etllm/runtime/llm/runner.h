//===- runner.h - Text generation on a program ------------------*- C++ -*-===//
//
// Loads a program and its tokenizer, and turns a prompt into text: one
// prefill call over the whole prompt (the sequence dimension is dynamic),
// then one decode call per token, sampling as configured, with honest
// statistics.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_LLM_RUNNER_H
#define ETLLM_RUNTIME_LLM_RUNNER_H

#include "etllm/runtime/flags.h"
#include "etllm/runtime/llm/sampler.h"
#include "etllm/runtime/llm/vision_methods.h"
#include "etllm/runtime/program.h"
#include "etllm/runtime/tokenizer.h"

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace etllm::rt::llm {

struct GenerationConfig {
  /// Tokens to generate at most (stops earlier at EOS or a stop string, or
  /// when the context is full).
  int32_t maxNewTokens = 128;
  SamplingConfig sampling;
  /// Generation stops when the generated text contains one of these (the
  /// stop string itself is not emitted).
  std::vector<std::string> stopStrings;
  /// Prepend BOS to the prompt (when the tokenizer has one).
  bool addBos = true;
  /// More ids that end generation (e.g. a chat template's <|im_end|>),
  /// besides the tokenizer's and the program's EOS ids.
  std::vector<int32_t> stopIds;
  /// When set (from another thread or a signal handler), generation stops
  /// before the next token with stop reason "interrupted".
  const std::atomic<bool> *cancel = nullptr;
  /// What a full context does. false: generation stops (stop reason
  /// "context"). true: the context shifts and generation goes on: the first
  /// `sinkTokens` tokens stay (StreamingLLM's attention sinks), the older
  /// half of the others is dropped, and the kept tokens are prefilled again
  /// at positions 0, 1, ... (recomputed, so the cache is exactly that of
  /// the shorter context; memory stays that of max_seq_len).
  bool shiftContext = false;
  int32_t sinkTokens = 4;
};

/// The context-shift policy (GenerationConfig::shiftContext), the one both
/// the runner and a chat apply: of `size` tokens the first `sinkTokens`
/// stay and the older half of the rest goes, or `needed` tokens when that
/// is more. Returns the number to drop after the sink, 0 when no shift can
/// make the room while leaving `keepAtLeast` tokens after the sink.
size_t contextShiftDrop(size_t size, size_t sink, int64_t needed,
                        size_t keepAtLeast);

/// The values each number of a GenerationConfig may take: the one source
/// for etllm-run's flags, the Python and C APIs and Runner::generate.
namespace limits {
inline constexpr NumberRange kMaxNewTokens{0, 2147483647.0, false, false, true};
inline constexpr NumberRange kTemperature{0, 3.4028234663852886e38};
inline constexpr NumberRange kTopK{0, 2147483647.0, false, false, true};
inline constexpr NumberRange kTopP{0, 1, true, false};
inline constexpr NumberRange kMinP{0, 1};
inline constexpr NumberRange kRepetitionPenalty{0, 3.4028234663852886e38, true,
                                                false};
inline constexpr NumberRange kSinkTokens{0, 2147483647.0, false, false, true};
} // namespace limits

/// Checks every number of `config` against `limits` (names as the APIs
/// spell them: "max_new_tokens", "temperature", ...). Runner::generate and
/// continueWith call it, so no API can pass NaN or a negative count.
Status validate(const GenerationConfig &config);

/// Timings and counts of one generate() call (milliseconds).
struct Stats {
  double loadMs = 0;    // program + tokenizer load (Runner::load)
  double ttftMs = 0;    // generate() start to the first generated token
  double prefillMs = 0; // the prompt's forward call
  double decodeMs = 0;  // forward calls of generated tokens after the first
  double samplingMs = 0;
  /// Images this call encoded (a chat turn: its new ones), and the vision
  /// encoder's time for them
  /// (part of prefillMs).
  int64_t images = 0;
  double imageEncodeMs = 0;
  int64_t promptTokens = 0;
  int64_t generatedTokens = 0;
  uint64_t peakRssBytes = 0;
  uint64_t plannedBytes = 0; // planned activations + mutable buffers
  // "eos", "max_new_tokens", "stop_string", "context", "interrupted"
  std::string stopReason;
  /// Tokens whose KV state was reused from the previous call (not
  /// prefilled again), and tokens in the KV cache after this call.
  int64_t cachedTokens = 0;
  int64_t contextTokens = 0;
  /// Times the context was full and shifted (GenerationConfig::
  /// shiftContext), and the time their prefills took (not in decodeMs).
  int64_t contextShifts = 0;
  double shiftMs = 0;
  double prefillTokensPerSecond() const;
  double decodeTokensPerSecond() const;
  /// One line of JSON with every field.
  std::string toJson() const;
};

struct RunnerOptions {
  /// A tokenizer file to use instead of the program's own.
  std::string tokenizerPath;
  size_t numThreads = 1;
  const KernelTable *kernels = nullptr;
  /// The memory budget (ModuleOptions::maxMemory): 0 = physical memory.
  uint64_t maxMemory = 0;
};

class StaticMethods;

/// Generation on a program's `forward`, or on a static-shape program's
/// `prefill` and `decode` (model.static_prefill_chunk; the same calls).
class Runner {
public:
  static Result<std::unique_ptr<Runner>> load(const std::string &programPath,
                                              const RunnerOptions &options);
  ~Runner();
  /// Generates from `prompt`; `onText` receives the generated text as it is
  /// produced (bytes; a multi-byte character may be split across calls).
  /// The KV cache starts empty every call.
  Result<Stats>
  generate(const std::string &prompt, const GenerationConfig &config,
           const std::function<void(const std::string &)> &onText);
  /// Generates after the token sequence `tokens`, reusing the KV cache for
  /// its longest common prefix with the sequence already in the cache (a
  /// chat's next turn prefills only its new tokens). Stats::promptTokens
  /// counts the tokens prefilled, Stats::cachedTokens those reused.
  /// A composite model's prompt with images: each `<image>` of the text
  /// (kImagePlaceholder) is one image of `images` in order, or, when the
  /// text has none, the images come first (after BOS). The text between
  /// placeholders is tokenized piece by piece; each image takes
  /// imageSeqLen() positions, fed its features by the vision encoder, the
  /// text by forward. Starts from an empty cache. `images` empty: the text
  /// prompt's generate().
  Result<Stats>
  generate(const std::string &prompt, const std::vector<ImagePixels> &images,
           const GenerationConfig &config,
           const std::function<void(const std::string &)> &onText);
  /// The image methods; null for a text-only program.
  const VisionMethods *vision() const { return vision_.get(); }

  /// Where an image goes in a token sequence: its imageSeqLen() positions
  /// start at `at` (the tokens there are image placeholders).
  struct ImageAt {
    size_t at = 0;
    const ImagePixels *pixels = nullptr;
    /// Which of the image's encodings: a tile, or -1 its only or global
    /// image.
    int64_t tile = -1;
  };
  /// A prompt with images as tokens: the text between the placeholders
  /// tokenized piece by piece (BOS first when `addBos`), each image's
  /// positions filled with the image token; an image split into tiles takes
  /// positions for each tile and its global image (`chunks`, in order).
  struct ImagePrompt {
    struct Chunk {
      size_t at = 0;     // its first position
      size_t image = 0;  // which image
      int64_t tile = -1; // which tile (-1: the only or global image)
    };
    std::vector<int32_t> tokens;
    std::vector<Chunk> chunks;
  };
  /// An image's tiles: rows x cols (0 x 0: not split).
  struct ImageGrid {
    int64_t rows = 0, cols = 0;
  };
  /// The tokens of `text` whose kImagePlaceholder marks go to the images of
  /// `grids` in order (none: the images first), each wrapped in the text
  /// and tokens the program's metadata gives (VisionMethods). `encode`
  /// tokenizes a piece (default: the tokenizer's encode without BOS).
  Result<ImagePrompt> tokenizeWithImages(
      const std::string &text, const std::vector<ImageGrid> &grids,
      bool addBos,
      const std::function<Result<std::vector<int32_t>>(const std::string &)>
          &encode = nullptr) const;
  /// continueWith over tokens that hold images: the cached prefix is kept
  /// up to the first difference (never into an image: an image the prefix
  /// ends inside is fed again, whole), then the text goes through forward
  /// and each image's features through text_decoder, in order. The images
  /// before the kept end are taken as cached (a conversation's earlier
  /// images are the same); what is fed must hold every image after it.
  Result<Stats>
  continueWith(const std::vector<int32_t> &tokens,
               const std::vector<ImageAt> &images,
               const GenerationConfig &config,
               const std::function<void(const std::string &)> &onText);
  Result<Stats>
  continueWith(const std::vector<int32_t> &tokens,
               const GenerationConfig &config,
               const std::function<void(const std::string &)> &onText);
  /// The token sequence whose KV state is in the cache (the prompt and the
  /// generated tokens that were fed back; not the last sampled one).
  const std::vector<int32_t> &cachedTokens() const { return cache_; }
  /// Forgets the KV cache.
  void resetCache();
  const Tokenizer &tokenizer() const { return *tokenizer_; }
  const Program &program() const { return *program_; }
  /// The program's instance (its LoRA adapters: Module::applyLora). The
  /// KV cache holds state computed with the adapters applied when it was
  /// filled: call resetCache() after changing them.
  Module &module() { return *module_; }
  /// The program, shared (LoraAdapter::load takes it).
  const std::shared_ptr<Program> &sharedProgram() const { return program_; }
  /// The most positions the cache holds for one text: the context, or
  /// effectively no limit with attention sinks (KvRing), whose caches are
  /// rings.
  int64_t maxSeqLen() const { return maxSeqLen_; }

private:
  Runner() = default;
  /// The logits of the last of `tokens` fed at positions from startPos
  /// (in calls of at most callChunk_ tokens with ring caches).
  Result<const float *> forward(const std::vector<int64_t> &tokens,
                                int64_t startPos);
  /// One call of `forward` over n tokens.
  Result<const float *> call(const int64_t *tokens, int64_t n,
                             int64_t startPos);
  /// The full context shifted to make room for `incoming` tokens
  /// (GenerationConfig::shiftContext); false when nothing can be dropped.
  Result<bool> shiftContext(int64_t sinkTokens, size_t incoming);
  /// continueWith with images (none: text only).
  Result<Stats>
  continueFrom(const std::vector<int32_t> &tokens,
               const std::vector<ImageAt> &images,
               const GenerationConfig &config,
               const std::function<void(const std::string &)> &onText);
  /// The prefill of tokens[keep..] with the images that start there.
  Result<const float *> prefillImages(const std::vector<int32_t> &tokens,
                                      size_t keep,
                                      const std::vector<ImageAt> &images,
                                      double *encodeMs);
  /// Zeroes the KV state: the Module's buffers and a static program's
  /// caches.
  void resetState();
  std::shared_ptr<Program> program_;
  std::unique_ptr<Module> module_;
  Method *method_ = nullptr; // `forward`, or null for a static program
  std::unique_ptr<StaticMethods> static_;
  std::unique_ptr<VisionMethods> vision_;
  /// Where the cache holds images' features: they cannot be recomputed
  /// from the tokens (no context shift over them; a prefix ending inside
  /// one feeds it again).
  std::vector<size_t> cachedImageAt_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int32_t> stopIds_;
  int64_t maxSeqLen_ = 0, vocab_ = 0;
  /// Ring caches (ProgramMetadata::ringChunk): the most tokens of a call
  /// (0: any up to the context); the prompt goes in chunks of it.
  int64_t callChunk_ = 0;
  double loadMs_ = 0;
  std::vector<int64_t> posScratch_;
  std::vector<float> logits_;
  std::vector<int32_t> cache_;
  double lastShiftMs_ = 0;
};

/// Creates the tokenizer a program names (embedded file or vocabulary).
Result<std::unique_ptr<Tokenizer>> tokenizerForProgram(const Program &program);

/// Peak resident set size of this process, in bytes.
uint64_t peakRssBytes();

} // namespace etllm::rt::llm

#endif // ETLLM_RUNTIME_LLM_RUNNER_H
