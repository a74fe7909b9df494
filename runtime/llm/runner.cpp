//===- runner.cpp - Text generation on a program --------------------------===//
#include "etllm/runtime/llm/runner.h"

#include "etllm/runtime/llm/method_names.h"
#include "etllm/runtime/llm/static_methods.h"

#include <chrono>
#include <cstring>
#include <sstream>
#include <sys/resource.h>

namespace etllm::rt::llm {

namespace {
using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
} // namespace

uint64_t peakRssBytes() {
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
#if defined(__APPLE__)
  return uint64_t(usage.ru_maxrss); // Darwin (macOS, iOS) reports bytes
#else
  return uint64_t(usage.ru_maxrss) * 1024; // Linux and Android report KiB
#endif
}

double Stats::prefillTokensPerSecond() const {
  return prefillMs > 0 ? promptTokens / (prefillMs / 1000.0) : 0;
}
double Stats::decodeTokensPerSecond() const {
  // The first generated token comes from the prefill call; the decode rate
  // counts the calls after it.
  int64_t n = generatedTokens > 0 ? generatedTokens - 1 : 0;
  return decodeMs > 0 ? n / (decodeMs / 1000.0) : 0;
}

std::string Stats::toJson() const {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(3);
  os << "{\"load_ms\":" << loadMs << ",\"ttft_ms\":" << ttftMs
     << ",\"prefill_ms\":" << prefillMs << ",\"decode_ms\":" << decodeMs
     << ",\"sampling_ms\":" << samplingMs
     << ",\"prompt_tokens\":" << promptTokens
     << ",\"generated_tokens\":" << generatedTokens
     << ",\"prefill_tokens_per_second\":" << prefillTokensPerSecond()
     << ",\"decode_tokens_per_second\":" << decodeTokensPerSecond()
     << ",\"peak_rss_bytes\":" << peakRssBytes
     << ",\"planned_bytes\":" << plannedBytes << ",\"stop_reason\":\""
     << stopReason << "\",\"cached_tokens\":" << cachedTokens
     << ",\"context_tokens\":" << contextTokens
     << ",\"context_shifts\":" << contextShifts << ",\"shift_ms\":" << shiftMs
     << ",\"images\":" << images << ",\"image_encode_ms\":" << imageEncodeMs
     << "}";
  return os.str();
}

Result<std::unique_ptr<Tokenizer>> tokenizerForProgram(const Program &program) {
  const TokenizerMetadata &t = program.metadata().tokenizer;
  if (t.fileData)
    return loadTokenizerFromBuffer(t.fileData, t.fileSize,
                                   program.name() + " (embedded " + t.fileName +
                                       ")");
  if (t.kind == "gguf-llama" || t.kind == "gguf-gpt2") {
    EmbeddedVocab v;
    v.model = t.kind == "gguf-llama" ? "llama" : "gpt2";
    v.pre = t.pre;
    v.tokens = t.tokens;
    v.scores = t.scores;
    v.types = t.tokenTypes;
    v.merges = t.merges;
    v.bos = int32_t(t.bosId);
    v.eos = int32_t(t.eosId);
    v.unk = int32_t(t.unkId);
    v.pad = int32_t(t.padId);
    v.eot = int32_t(t.eotId);
    v.addBos = t.addBos;
    v.addSpacePrefix = t.addSpacePrefix;
    return tokenizerFromVocab(v, program.name() + " (embedded vocabulary)");
  }
  if (t.kind.empty())
    return Error(program.name() +
                 ": the program carries no tokenizer; pass --tokenizer");
  return Error(program.name() + ": unsupported embedded tokenizer kind '" +
               t.kind + "'");
}

Result<std::unique_ptr<Runner>> Runner::load(const std::string &path,
                                             const RunnerOptions &options) {
  auto start = Clock::now();
  std::unique_ptr<Runner> r(new Runner());
  auto program = Program::load(path);
  if (!program.ok())
    return program.error();
  r->program_ = *program;
  ModuleOptions mo;
  mo.numThreads = options.numThreads;
  mo.kernels = options.kernels;
  mo.maxMemory = options.maxMemory;
  auto module = Module::create(r->program_, mo);
  if (!module.ok())
    return module.error();
  r->module_ = std::move(module.value());
  const ProgramMetadata &md = r->program_->metadata();
  auto statics = StaticMethods::open(*r->module_, path, md.contextLimit());
  if (!statics.ok())
    return statics.error();
  r->static_ = std::move(statics.value());
  if (r->static_) {
    r->maxSeqLen_ = r->static_->maxSeqLen();
    r->vocab_ = r->static_->vocab();
    // Ring caches: its calls are its prefill chunk or one token.
    if (md.ringChunk > 0)
      r->callChunk_ = r->static_->chunk();
  } else {
    auto method = r->module_->method(kForwardMethod);
    if (!method.ok())
      return method.error();
    r->method_ = *method;
    if (r->method_->numInputs() != 2 || r->method_->numOutputs() != 1 ||
        r->method_->input(0).dtype != DType::I64 ||
        r->method_->input(0).rank != 2 ||
        r->method_->input(1).dtype != DType::I64 ||
        r->method_->input(1).rank != 1)
      return Error(path + ": `forward` is not forward(tokens: i64 [1, seq], "
                          "input_pos: i64 [seq]) -> logits");
    r->maxSeqLen_ =
        md.maxSeqLen > 0 ? md.maxSeqLen : r->method_->input(0).sizes[1];
    if (md.ringChunk > 0) {
      // Calls of at most the chunk (the input's bound) over a context of
      // max_seq_len, or without end when the caches have sinks.
      r->callChunk_ =
          std::min<int64_t>(md.ringChunk, r->method_->input(0).sizes[1]);
      r->maxSeqLen_ = md.contextLimit();
    } else {
      r->maxSeqLen_ =
          std::min<int64_t>(r->maxSeqLen_, r->method_->input(0).sizes[1]);
    }
    const Tensor &logits = r->method_->output(0);
    r->vocab_ = logits.rank > 0 ? logits.sizes[logits.rank - 1] : 0;
  }
  auto vision = VisionMethods::open(*r->module_, path, r->vocab_);
  if (!vision.ok())
    return vision.error();
  r->vision_ = std::move(vision.value());
  if (r->vision_ && (r->static_ || md.ringChunk > 0))
    return Error(path + ": a composite model's program with static methods "
                        "or ring caches is not supported");
  if (options.tokenizerPath.empty()) {
    auto tok = tokenizerForProgram(*r->program_);
    if (!tok.ok())
      return tok.error();
    r->tokenizer_ = std::move(tok.value());
  } else {
    auto tok = loadTokenizer(options.tokenizerPath);
    if (!tok.ok())
      return tok.error();
    r->tokenizer_ = std::move(tok.value());
  }
  if (r->tokenizer_->vocabSize() > r->vocab_)
    return Error(path + ": the tokenizer has " +
                 std::to_string(r->tokenizer_->vocabSize()) +
                 " tokens, more than the model's " + std::to_string(r->vocab_));
  r->stopIds_ = r->tokenizer_->stopIds();
  for (int64_t e : md.eosIds)
    if (e >= 0)
      r->stopIds_.push_back(int32_t(e));
  r->posScratch_.reserve(r->callChunk_ > 0 ? r->callChunk_ : r->maxSeqLen_);
  r->logits_.resize(r->vocab_);
  r->loadMs_ = msSince(start);
  return r;
}

Runner::~Runner() = default;

Result<const float *> Runner::forward(const std::vector<int64_t> &tokens,
                                      int64_t startPos) {
  if (static_)
    return static_->forward(tokens, startPos);
  // Ring caches take at most callChunk_ tokens a call: the earlier calls'
  // logits are not needed.
  const int64_t total = int64_t(tokens.size());
  const int64_t step =
      callChunk_ > 0 ? callChunk_ : std::max<int64_t>(total, 1);
  for (int64_t done = 0;; done += step) {
    const int64_t n = std::min(step, total - done);
    auto logits = call(tokens.data() + done, n, startPos + done);
    if (!logits.ok() || done + n >= total)
      return logits;
  }
}

Result<const float *> Runner::call(const int64_t *tokens, int64_t n,
                                   int64_t startPos) {
  posScratch_.resize(n);
  for (int64_t i = 0; i < n; ++i)
    posScratch_[i] = startPos + i;
  int64_t tokSizes[2] = {1, n};
  ETLLM_RETURN_IF_ERROR(
      method_->setInput(0, DType::I64, tokSizes, 2, tokens));
  ETLLM_RETURN_IF_ERROR(
      method_->setInput(1, DType::I64, &n, 1, posScratch_.data()));
  ETLLM_RETURN_IF_ERROR(method_->execute());
  const Tensor &out = method_->output(0);
  if (out.dtype != DType::F32 || out.rank < 1 || out.dim(-1) != vocab_)
    return Error("the model's output is not f32 logits over the vocabulary");
  // The last position's row (all positions, or only the last, are fine).
  return out.ptr<float>() + (out.numel() - vocab_);
}

void Runner::resetState() {
  cachedImageAt_.clear();
  module_->resetState();
  if (static_)
    static_->reset();
}

void Runner::resetCache() {
  cache_.clear();
  resetState();
}

Status validate(const GenerationConfig &c) {
  ETLLM_RETURN_IF_ERROR(
      checkNumber("max_new_tokens", c.maxNewTokens, limits::kMaxNewTokens));
  ETLLM_RETURN_IF_ERROR(
      checkNumber("temperature", c.sampling.temperature, limits::kTemperature));
  ETLLM_RETURN_IF_ERROR(checkNumber("top_k", c.sampling.topK, limits::kTopK));
  ETLLM_RETURN_IF_ERROR(checkNumber("top_p", c.sampling.topP, limits::kTopP));
  ETLLM_RETURN_IF_ERROR(checkNumber("min_p", c.sampling.minP, limits::kMinP));
  ETLLM_RETURN_IF_ERROR(checkNumber("repetition_penalty",
                                    c.sampling.repetitionPenalty,
                                    limits::kRepetitionPenalty));
  ETLLM_RETURN_IF_ERROR(
      checkNumber("sink_tokens", c.sinkTokens, limits::kSinkTokens));
  return Status();
}

Result<Stats>
Runner::generate(const std::string &prompt, const GenerationConfig &config,
                 const std::function<void(const std::string &)> &onText) {
  ETLLM_RETURN_IF_ERROR(validate(config));
  auto encoded = tokenizer_->encode(prompt, config.addBos);
  if (!encoded.ok())
    return encoded.error();
  if (encoded->empty())
    return Error("the prompt encodes to no tokens (an empty prompt needs a "
                 "tokenizer with BOS)");
  if (int64_t(encoded->size()) > maxSeqLen_)
    return Error("the prompt has " + std::to_string(encoded->size()) +
                 " tokens, more than the model's context of " +
                 std::to_string(maxSeqLen_));
  cache_.clear(); // continueWith zeroes the state when it keeps nothing
  return continueWith(*encoded, config, onText);
}

Result<Runner::ImagePrompt> Runner::tokenizeWithImages(
    const std::string &text, const std::vector<ImageGrid> &grids,
    bool addBos,
    const std::function<Result<std::vector<int32_t>>(const std::string &)>
        &encode) const {
  if (!vision_)
    return noVisionEncoder(program_->name());
  const size_t images = grids.size();
  // The text around the placeholders; no placeholder: the images first.
  const std::string mark = kImagePlaceholder;
  std::vector<std::string> pieces;
  for (size_t from = 0;;) {
    size_t at = text.find(mark, from);
    pieces.push_back(text.substr(from, at - from));
    if (at == std::string::npos)
      break;
    from = at + mark.size();
  }
  if (pieces.size() == 1)
    pieces.insert(pieces.begin(), images, std::string());
  else if (pieces.size() - 1 != images)
    return Error("the prompt has " + std::to_string(pieces.size() - 1) + " " +
                 mark + " placeholders for " + std::to_string(images) +
                 " images");
  ImagePrompt out;
  const int64_t n = vision_->imageSeqLen();
  if (addBos && tokenizer_->bosId() >= 0)
    out.tokens.push_back(tokenizer_->bosId());
  // The text not yet tokenized: what the model's processor puts around an
  // image joins the prompt's text beside it, and the whole is tokenized
  // apart from the image tokens, as the processor's tokenizer splits at
  // them.
  std::string pending;
  auto flush = [&]() -> Status {
    if (pending.empty())
      return Status();
    auto encoded = encode ? encode(pending)
                          : tokenizer_->encode(pending, /*addBos=*/false);
    if (!encoded.ok())
      return encoded.error();
    out.tokens.insert(out.tokens.end(), encoded->begin(), encoded->end());
    pending.clear();
    return Status();
  };
  auto chunk = [&](size_t image, int64_t tile) -> Status {
    ETLLM_RETURN_IF_ERROR(flush());
    out.chunks.push_back({out.tokens.size(), image, tile});
    out.tokens.insert(out.tokens.end(), size_t(n),
                      int32_t(vision_->imageTokenId()));
    return Status();
  };
  // "{row}" and "{col}" of the tile text, 1-based.
  auto tileText = [&](int64_t row, int64_t col) {
    std::string t = vision_->tileText();
    for (auto [key, value] : {std::pair{"{row}", row}, std::pair{"{col}", col}})
      for (size_t at = t.find(key); at != std::string::npos;
           at = t.find(key, at))
        t.replace(at, 5, std::to_string(value));
    return t;
  };
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) {
      const size_t image = i - 1;
      const ImageGrid &g = grids[image];
      if (g.rows > 0 && g.cols > 0) {
        for (int64_t r = 0; r < g.rows; ++r) {
          for (int64_t c = 0; c < g.cols; ++c) {
            pending += tileText(r + 1, c + 1);
            ETLLM_RETURN_IF_ERROR(chunk(image, r * g.cols + c));
          }
          pending += vision_->rowEndText();
        }
        pending += vision_->tilesEndText();
      }
      pending += vision_->textBefore();
      ETLLM_RETURN_IF_ERROR(flush());
      if (vision_->imageBeginTokenId() >= 0)
        out.tokens.push_back(int32_t(vision_->imageBeginTokenId()));
      ETLLM_RETURN_IF_ERROR(chunk(image, -1));
      if (vision_->imageEndTokenId() >= 0)
        out.tokens.push_back(int32_t(vision_->imageEndTokenId()));
      pending += vision_->textAfter();
    }
    pending += pieces[i];
  }
  ETLLM_RETURN_IF_ERROR(flush());
  return out;
}

Result<Stats>
Runner::generate(const std::string &prompt,
                 const std::vector<ImagePixels> &images,
                 const GenerationConfig &config,
                 const std::function<void(const std::string &)> &onText) {
  if (images.empty())
    return generate(prompt, config, onText);
  ETLLM_RETURN_IF_ERROR(validate(config));
  std::vector<ImageGrid> grids;
  for (const ImagePixels &image : images)
    grids.push_back({image.rows, image.cols});
  auto p = tokenizeWithImages(prompt, grids, config.addBos);
  if (!p.ok())
    return p.error();
  std::vector<ImageAt> at;
  for (const ImagePrompt::Chunk &c : p->chunks)
    at.push_back({c.at, &images[c.image], c.tile});
  resetCache(); // new images: nothing cached is theirs
  return continueFrom(p->tokens, at, config, onText);
}

Result<Stats>
Runner::continueWith(const std::vector<int32_t> &tokens,
                     const std::vector<ImageAt> &images,
                     const GenerationConfig &config,
                     const std::function<void(const std::string &)> &onText) {
  return continueFrom(tokens, images, config, onText);
}

Result<const float *>
Runner::prefillImages(const std::vector<int32_t> &tokens, size_t keep,
                      const std::vector<ImageAt> &images, double *encodeMs) {
  Result<const float *> last = Error("there are no tokens to feed");
  const size_t n = size_t(vision_->imageSeqLen());
  size_t done = keep;
  for (size_t i = 0; i <= images.size(); ++i) {
    if (i < images.size() && images[i].at + n <= keep)
      continue; // cached
    const size_t end = i < images.size() ? images[i].at : tokens.size();
    if (end > done) {
      std::vector<int64_t> text(tokens.begin() + done, tokens.begin() + end);
      last = forward(text, int64_t(done));
      if (!last.ok())
        return last;
    }
    if (i == images.size())
      break;
    double ms = 0;
    last = vision_->prefill(*images[i].pixels, int64_t(end), &ms,
                            images[i].tile);
    if (!last.ok())
      return last;
    *encodeMs += ms;
    cachedImageAt_.push_back(end);
    done = end + n;
  }
  return last;
}

size_t contextShiftDrop(size_t size, size_t sink, int64_t needed,
                        size_t keepAtLeast) {
  sink = std::min(sink, size);
  const size_t rest = size - sink;
  const size_t drop = std::max(rest / 2, size_t(std::max<int64_t>(needed, 0)));
  return drop + keepAtLeast <= rest ? drop : 0;
}

Result<bool> Runner::shiftContext(int64_t sinkTokens, size_t incoming) {
  if (!cachedImageAt_.empty())
    return false; // an image's features cannot be fed again from its tokens
  auto t0 = Clock::now();
  const size_t sink =
      std::min(size_t(std::max<int64_t>(sinkTokens, 0)), cache_.size());
  const size_t drop = contextShiftDrop(
      cache_.size(), sink, int64_t(cache_.size() + incoming) - maxSeqLen_, 0);
  if (drop == 0)
    return false; // nothing to drop: the context stays full
  std::vector<int64_t> kept(cache_.begin(), cache_.begin() + sink);
  kept.insert(kept.end(), cache_.begin() + sink + drop, cache_.end());
  resetState();
  cache_.clear();
  if (!kept.empty()) {
    auto logits = forward(kept, 0);
    if (!logits.ok()) {
      resetCache();
      return logits.error();
    }
    for (int64_t t : kept)
      cache_.push_back(int32_t(t));
  }
  lastShiftMs_ = msSince(t0);
  return true;
}

Result<Stats>
Runner::continueWith(const std::vector<int32_t> &tokens,
                     const GenerationConfig &config,
                     const std::function<void(const std::string &)> &onText) {
  return continueFrom(tokens, {}, config, onText);
}

Result<Stats>
Runner::continueFrom(const std::vector<int32_t> &tokens,
                     const std::vector<ImageAt> &images,
                     const GenerationConfig &config,
                     const std::function<void(const std::string &)> &onText) {
  ETLLM_RETURN_IF_ERROR(validate(config));
  if (!images.empty()) {
    if (!vision_)
      return noVisionEncoder(program_->name());
    if (callChunk_ > 0)
      return Error("images with ring KV caches are not supported");
    const size_t n = size_t(vision_->imageSeqLen());
    for (size_t i = 0; i < images.size(); ++i)
      if (!images[i].pixels || images[i].at + n > tokens.size() ||
          (i > 0 && images[i].at < images[i - 1].at + n))
        return Error("image " + std::to_string(i) +
                     " is not at image positions of the tokens");
  }
  Stats stats;
  stats.loadMs = loadMs_;
  auto start = Clock::now();
  if (tokens.empty())
    return Error("there are no tokens to generate from");
  if (int64_t(tokens.size()) > maxSeqLen_)
    return Error("the prompt has " + std::to_string(tokens.size()) +
                 " tokens, more than the model's context of " +
                 std::to_string(maxSeqLen_));
  for (int32_t t : tokens)
    if (t < 0 || t >= vocab_)
      return Error("token id " + std::to_string(t) +
                   " is outside the model's vocabulary");
  // The cached prefix stays; at least one token is fed to get logits.
  size_t keep = 0;
  while (keep < cache_.size() && keep < tokens.size() &&
         cache_[keep] == tokens[keep])
    ++keep;
  if (keep == tokens.size())
    --keep;
  // A ring has overwritten the slots of positions older than its window:
  // going back more than one call's tokens would attend to newer entries
  // in them, so the state is rebuilt from the start instead.
  if (callChunk_ > 0 && cache_.size() - keep > size_t(callChunk_))
    keep = 0;
  // A kept prefix that ends inside a cached image feeds that image again
  // (whole), which needs its pixels; without them, from the start.
  if (vision_) {
    const size_t n = size_t(vision_->imageSeqLen());
    for (size_t at : cachedImageAt_)
      if (keep > at && keep < at + n) {
        keep = at;
        bool given = false;
        for (const ImageAt &i : images)
          given |= i.at == at;
        if (!given)
          return Error("the tokens differ from the cached conversation "
                       "inside an image (its features cannot be fed again "
                       "from the tokens): give the images again");
      }
    std::vector<size_t> still;
    for (size_t at : cachedImageAt_)
      if (at + n <= keep)
        still.push_back(at);
    cachedImageAt_ = std::move(still);
  }
  if (keep == 0)
    resetState();
  cache_.resize(keep);
  stats.cachedTokens = int64_t(keep);
  double encodeMs = 0; // the images encoded by this call's prefill
  const size_t imagesBefore = cachedImageAt_.size();
  std::vector<int32_t> history = tokens;
  stats.promptTokens = int64_t(tokens.size() - keep);
  Sampler sampler(int32_t(vocab_), config.sampling);
  std::vector<int64_t> input(tokens.begin() + keep, tokens.end());
  std::vector<int32_t> stopIds = stopIds_;
  stopIds.insert(stopIds.end(), config.stopIds.begin(), config.stopIds.end());

  std::string generated; // only kept when there are stop strings
  size_t emitted = 0;    // bytes of `generated` passed to onText
  int64_t pos = int64_t(keep);
  stats.stopReason = "max_new_tokens";
  for (int32_t step = 0; step < config.maxNewTokens; ++step) {
    if (pos + int64_t(input.size()) > maxSeqLen_) {
      auto shifted = config.shiftContext
                         ? shiftContext(config.sinkTokens, input.size())
                         : Result<bool>(false);
      if (!shifted.ok())
        return shifted.error();
      if (!*shifted) {
        stats.stopReason = "context";
        break;
      }
      pos = int64_t(cache_.size());
      ++stats.contextShifts;
      stats.shiftMs += lastShiftMs_;
    }
    if (config.cancel && config.cancel->load()) {
      stats.stopReason = "interrupted";
      break;
    }
    auto t0 = Clock::now();
    auto logits = step == 0 && !images.empty()
                      ? prefillImages(tokens, keep, images, &encodeMs)
                      : forward(input, pos);
    if (!logits.ok()) {
      resetCache();
      return logits.error();
    }
    for (int64_t t : input)
      cache_.push_back(int32_t(t));
    double ms = msSince(t0);
    if (step == 0)
      stats.prefillMs = ms;
    else
      stats.decodeMs += ms;
    pos += input.size();
    auto s0 = Clock::now();
    std::memcpy(logits_.data(), *logits, vocab_ * sizeof(float));
    int32_t next = sampler.sample(logits_.data(), history);
    stats.samplingMs += msSince(s0);
    if (step == 0)
      stats.ttftMs = msSince(start);
    if (std::find(stopIds.begin(), stopIds.end(), next) != stopIds.end()) {
      stats.stopReason = "eos";
      break;
    }
    ++stats.generatedTokens;
    std::string piece = tokenizer_->decodeToken(history.back(), next);
    history.push_back(next);
    input.assign(1, next);
    if (config.stopStrings.empty()) {
      onText(piece);
      continue;
    }
    // Hold back any tail that could still become a stop string, so a stop
    // string split across tokens is never printed.
    generated += piece;
    size_t cut = std::string::npos;
    for (const std::string &s : config.stopStrings)
      if (!s.empty())
        if (size_t at = generated.find(s, emitted); at != std::string::npos)
          cut = std::min(cut, at);
    if (cut != std::string::npos) {
      if (cut > emitted)
        onText(generated.substr(emitted, cut - emitted));
      emitted = generated.size();
      stats.stopReason = "stop_string";
      break;
    }
    size_t hold = 0;
    for (const std::string &s : config.stopStrings)
      if (!s.empty())
        for (size_t n = std::min(s.size() - 1, generated.size() - emitted);
             n > hold; --n)
          if (generated.compare(generated.size() - n, n, s, 0, n) == 0) {
            hold = n;
            break;
          }
    size_t upto = generated.size() - hold;
    if (upto > emitted) {
      onText(generated.substr(emitted, upto - emitted));
      emitted = upto;
    }
  }
  if (stats.stopReason != "stop_string" && emitted < generated.size())
    onText(generated.substr(emitted));
  stats.images = int64_t(cachedImageAt_.size() - imagesBefore);
  stats.imageEncodeMs = encodeMs;
  stats.peakRssBytes = peakRssBytes();
  stats.plannedBytes =
      (static_ ? static_->plannedBytes() : method_->plannedBytes()) +
      (vision_ ? vision_->plannedBytes() : 0) + module_->bufferBytes();
  stats.contextTokens = int64_t(cache_.size());
  return stats;
}

} // namespace etllm::rt::llm
