//===- Llama2c.cpp - llama2.c v0 checkpoint reader ------------------------===//

#include "etllm/Formats/Llama2c.h"
#include "Internal.h"
#include "etllm/Models/Registry.h"

#include <cstring>

namespace etllm::formats {

namespace {

/// Per-layer and global float counts, in run.c's memory_map_weights order.
struct Layout {
  uint64_t dim, hidden, layers, heads, kvHeads, vocab, seqLen, headSize, kvDim;
  bool shared;
};

Result<Layout> layoutOf(const Llama2cHeader &h, const std::string &path) {
  auto bad = [&](const std::string &field, int64_t v,
                 const std::string &why) -> Error {
    return Error(path + ": llama2.c header field '" + field +
                 "' = " + std::to_string(v) + ": " + why);
  };
  const int64_t kMax = detail::kMaxConfigDim;
  struct Field {
    const char *name;
    int64_t v;
  } fields[] = {{"dim", h.dim},
                {"hidden_dim", h.hiddenDim},
                {"n_layers", h.numLayers},
                {"n_heads", h.numHeads},
                {"n_kv_heads", h.numKvHeads},
                {"seq_len", h.seqLen}};
  for (const Field &f : fields)
    if (f.v <= 0 || f.v > kMax)
      return bad(f.name, f.v, "must be in [1, " + std::to_string(kMax) + "]");
  int64_t vocab =
      h.vocabSize < 0 ? -static_cast<int64_t>(h.vocabSize) : h.vocabSize;
  if (vocab == 0 || vocab > kMax)
    return bad("vocab_size", h.vocabSize,
               "magnitude must be in [1, " + std::to_string(kMax) + "]");
  if (h.numLayers > 4096)
    return bad("n_layers", h.numLayers, "implausibly many layers");
  if (h.dim % h.numHeads != 0)
    return bad("n_heads", h.numHeads,
               "does not divide dim " + std::to_string(h.dim));
  if (h.numKvHeads > h.numHeads || h.numHeads % h.numKvHeads != 0)
    return bad("n_kv_heads", h.numKvHeads,
               "does not divide n_heads " + std::to_string(h.numHeads));
  int64_t headSize = h.dim / h.numHeads;
  if (headSize % 2 != 0)
    return bad("dim", h.dim,
               "gives an odd head size " + std::to_string(headSize));
  Layout l;
  l.dim = static_cast<uint64_t>(h.dim);
  l.hidden = static_cast<uint64_t>(h.hiddenDim);
  l.layers = static_cast<uint64_t>(h.numLayers);
  l.heads = static_cast<uint64_t>(h.numHeads);
  l.kvHeads = static_cast<uint64_t>(h.numKvHeads);
  l.vocab = static_cast<uint64_t>(vocab);
  l.seqLen = static_cast<uint64_t>(h.seqLen);
  l.headSize = static_cast<uint64_t>(headSize);
  l.kvDim = l.dim * l.kvHeads / l.heads;
  l.shared = h.vocabSize > 0;
  return l;
}

} // namespace

Result<uint64_t> llama2cExpectedFileSize(const Llama2cHeader &h,
                                         const std::string &path) {
  Result<Layout> lr = layoutOf(h, path);
  if (!lr)
    return lr.error();
  const Layout &l = *lr;
  // All factors are <= 1e7 and layers <= 4096, so these products fit easily;
  // the sums are still checked.
  uint64_t perLayer = l.dim                   // rms_att
                      + l.dim * l.dim         // wq
                      + 2 * l.dim * l.kvDim   // wk, wv
                      + l.dim * l.dim         // wo
                      + l.dim                 // rms_ffn
                      + 3 * l.dim * l.hidden; // w1, w2, w3
  uint64_t floats = 0, t;
  if (detail::mulOverflow(perLayer, l.layers, t) ||
      detail::addOverflow(floats, t, floats) ||
      detail::mulOverflow(l.vocab, l.dim, t) ||
      detail::addOverflow(floats, t * (l.shared ? 1 : 2), floats) ||
      detail::addOverflow(floats, l.dim + l.seqLen * l.headSize, floats) ||
      detail::mulOverflow(floats, 4, floats) ||
      detail::addOverflow(floats, sizeof(Llama2cHeader), floats))
    return Error(path + ": llama2.c header implies a file size that "
                        "overflows 64 bits");
  return floats;
}

Result<ModelConfig> configFromLlama2c(const Llama2cHeader &h) {
  Result<Layout> lr = layoutOf(h, "llama2.c header");
  if (!lr)
    return lr.error();
  ModelConfig c;
  c.architecture = models::llama2cFamily().hfArchitecture;
  ETLLM_RETURN_IF_ERROR(applyArchitectureTraits(c));
  c.hiddenSize = h.dim;
  c.intermediateSize = h.hiddenDim;
  c.numLayers = h.numLayers;
  c.numHeads = h.numHeads;
  c.numKvHeads = h.numKvHeads;
  c.headDim = h.dim / h.numHeads;
  c.vocabSize = static_cast<int64_t>(lr->vocab);
  c.maxPositionEmbeddings = h.seqLen;
  c.rmsNormEps = 1e-5; // run.c's rmsnorm
  c.ropeTheta = 10000.0;
  c.tieWordEmbeddings = lr->shared;
  c.hiddenAct = "silu";
  c.layerUsesSlidingWindow.assign(static_cast<size_t>(h.numLayers), false);
  c.bosTokenId = c.vocabSize > 1 ? 1 : -1;
  if (c.vocabSize > 2)
    c.eosTokenIds = {2};
  c.torchDtype = "float32";
  ETLLM_RETURN_IF_ERROR(validate(c));
  return c;
}

Result<std::unique_ptr<Checkpoint>> openLlama2c(const std::string &path) {
  Result<std::shared_ptr<rt::MappedFile>> mapped = rt::MappedFile::open(path);
  if (!mapped)
    return mapped.error();
  std::shared_ptr<rt::MappedFile> file = *mapped;
  if (file->size() < sizeof(Llama2cHeader))
    return Error(path + ": truncated llama2.c header: " +
                 std::to_string(file->size()) + " bytes, the header needs 28");
  Llama2cHeader h;
  std::memcpy(&h, file->data(), sizeof(h));
  if (static_cast<uint32_t>(h.dim) == 0x616b3432u)
    return Error(path + ": llama2.c export version 1/2 (\"ak42\" magic) is "
                        "not supported; only the legacy v0 format");
  Result<uint64_t> expected = llama2cExpectedFileSize(h, path);
  if (!expected)
    return expected.error();
  if (*expected != file->size())
    return Error(path + ": file size " + std::to_string(file->size()) +
                 " does not match the " + std::to_string(*expected) +
                 " bytes implied by the llama2.c header (dim " +
                 std::to_string(h.dim) + ", hidden_dim " +
                 std::to_string(h.hiddenDim) + ", n_layers " +
                 std::to_string(h.numLayers) + ", n_heads " +
                 std::to_string(h.numHeads) + ", n_kv_heads " +
                 std::to_string(h.numKvHeads) + ", vocab_size " +
                 std::to_string(h.vocabSize) + ", seq_len " +
                 std::to_string(h.seqLen) + ")");
  Result<ModelConfig> config = configFromLlama2c(h);
  if (!config)
    return Error(path + ": " + config.message());
  Result<Layout> layoutResult = layoutOf(h, path);
  Layout l = *layoutResult;

  detail::CheckpointBuilder b("llama2c", path);
  b.addFile(file);
  b.setConfig(*config);
  uint64_t offset = sizeof(Llama2cHeader);
  auto take = [&](const std::string &hfName, const std::string &srcName,
                  std::vector<int64_t> shape, int64_t permuteHeads) -> Status {
    TensorRef t;
    t.name = hfName;
    t.sourceName = srcName;
    t.file = path;
    t.dtype = DType::F32;
    uint64_t n = 1;
    for (int64_t d : shape)
      n *= static_cast<uint64_t>(d);
    t.shape = std::move(shape);
    t.nbytes = n * 4;
    t.fileOffset = offset;
    t.data = file->data() + offset;
    t.qkPermuteHeads = permuteHeads;
    offset += t.nbytes;
    return b.addTensor(std::move(t));
  };
  const int64_t dim = h.dim, hidden = h.hiddenDim,
                kvDim = static_cast<int64_t>(l.kvDim),
                vocab = static_cast<int64_t>(l.vocab);
  // run.c's layout: each weight for all layers in turn, HF names of the
  // llama2.c family.
  using models::HfModule;
  const models::FamilySpec &family = models::llama2cFamily();
  auto hf = [&](HfModule m, int64_t i = -1) {
    return models::hfPath(family, m, i) + ".weight";
  };
  auto src = [](const char *name, uint64_t i) {
    return std::string(name) + "[" + std::to_string(i) + "]";
  };
  struct PerLayer {
    HfModule module;
    const char *source;
    int64_t rows, cols, permuteHeads;
  };
  const PerLayer perLayer[] = {
      {HfModule::InputNorm, "rms_att_weight", dim, 0, 0},
      {HfModule::QProj, "wq", dim, dim, h.numHeads},
      {HfModule::KProj, "wk", kvDim, dim, h.numKvHeads},
      {HfModule::VProj, "wv", kvDim, dim, 0},
      {HfModule::OProj, "wo", dim, dim, 0},
      {HfModule::PostAttentionNorm, "rms_ffn_weight", dim, 0, 0},
      {HfModule::GateProj, "w1", hidden, dim, 0},
      {HfModule::DownProj, "w2", dim, hidden, 0},
      {HfModule::UpProj, "w3", hidden, dim, 0},
  };
  ETLLM_RETURN_IF_ERROR(
      take(hf(HfModule::Embed), "token_embedding_table", {vocab, dim}, 0));
  for (const PerLayer &w : perLayer)
    for (uint64_t i = 0; i < l.layers; ++i) {
      std::vector<int64_t> shape = {w.rows};
      if (w.cols)
        shape.push_back(w.cols);
      ETLLM_RETURN_IF_ERROR(take(hf(w.module, static_cast<int64_t>(i)),
                                 src(w.source, i), shape, w.permuteHeads));
    }
  ETLLM_RETURN_IF_ERROR(
      take(hf(HfModule::FinalNorm), "rms_final_weight", {dim}, 0));
  offset += l.seqLen * l.headSize * 4; // freq_cis_real + freq_cis_imag
  if (!l.shared)
    ETLLM_RETURN_IF_ERROR(take(hf(HfModule::LmHead), "wcls", {vocab, dim}, 0));
  if (offset != file->size())
    return Error(path + ": internal size mismatch reading llama2.c weights");
  return b.finish();
}

} // namespace etllm::formats
