//===- Runtime.cpp - Bindings of the runtime ------------------------------===//
//
// Program: a loaded, verified .pte and one Module instance of it (its own
// planned memory and KV caches). Outputs are NumPy arrays over the
// program's own output memory, without a copy: each keeps the Program alive
// (its `base`) and stays valid until the next call of that Program (the
// planned memory is reused), so copy what you keep (np.array(out)).
//
// Runner: the runtime's LLM runner (runtime/llm): the program's tokenizer,
// the sampler and the generation loop of etllm-run, with its statistics.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "etllm/runtime/backend.h"
#include "etllm/runtime/half.h"
#include "etllm/runtime/llm/runner.h"
#include "etllm/runtime/lora.h"
#include "etllm/runtime/profile.h"
#include "etllm/runtime/program.h"

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>

#include <mutex>

namespace py = pybind11;

namespace etllm::python {

namespace {

/// The NumPy dtype of a runtime element type (null for types NumPy has no
/// equivalent of: bf16, quantized).
py::object numpyDtype(rt::DType t) {
  switch (t) {
  case rt::DType::F32:
    return py::dtype::of<float>();
  case rt::DType::F16:
    return py::dtype("float16");
  case rt::DType::I64:
    return py::dtype::of<int64_t>();
  case rt::DType::I32:
    return py::dtype::of<int32_t>();
  case rt::DType::I8:
    return py::dtype::of<int8_t>();
  case rt::DType::U8:
    return py::dtype::of<uint8_t>();
  case rt::DType::Bool:
    return py::dtype("bool");
  default:
    return py::none();
  }
}

std::once_flag backendsOnce;
void registerBackends() {
  std::call_once(backendsOnce, [] { rt::registerBuiltinBackends(); });
}

/// A LoRA adapter file loaded for one Program (rt::LoraAdapter).
struct PyLoraAdapter {
  std::shared_ptr<const rt::LoraAdapter> adapter;
};

class PyProgram {
public:
  PyProgram(const std::string &path, size_t threads, const std::string &name,
            uint64_t maxMemory)
      : path_(path) {
    registerBackends();
    // Module::create checks the thread count (flags.h: checkThreads).
    auto program = rt::Program::load(path);
    if (!program.ok())
      raise(program.message());
    program_ = *program;
    rt::ModuleOptions mo;
    mo.numThreads = threads;
    mo.maxMemory = maxMemory;
    auto module = rt::Module::create(program_, mo);
    if (!module.ok())
      raise(module.message());
    module_ = std::move(module.value());
    auto method = module_->method(name);
    if (!method.ok())
      raise(method.message());
    method_ = *method;
  }

  /// The program's method `name`, over this Program's state.
  rt::Method *methodNamed(const std::string &name) {
    auto method = module_->method(name);
    if (!method.ok())
      raise(method.message());
    return *method;
  }

  /// Copies `arrays` into the inputs, runs the method (or `other`, a method
  /// of the same module), returns the outputs as views.
  py::list run(py::object self, const std::vector<py::object> &arrays,
               rt::Method *other = nullptr) {
    rt::Method *const saved = method_;
    if (other)
      method_ = other;
    struct Restore {
      rt::Method *&slot, *value;
      ~Restore() { slot = value; }
    } restore{method_, saved};
    if (arrays.size() != method_->numInputs())
      raise("'" + method_->name() + "' takes " +
            std::to_string(method_->numInputs()) + " inputs, got " +
            std::to_string(arrays.size()));
    std::vector<py::array> keep;
    for (size_t i = 0; i < arrays.size(); ++i) {
      const rt::Tensor &in = method_->input(i);
      py::object dt = numpyDtype(in.dtype);
      if (dt.is_none())
        raise("input " + std::to_string(i) + " has element type " +
              rt::dtypeName(in.dtype) + ", which NumPy cannot hold");
      py::array a = py::array::ensure(arrays[i], py::array::c_style |
                                                     py::array::forcecast);
      if (!a)
        raise("input " + std::to_string(i) + " is not array-like");
      a = a.attr("astype")(dt, py::arg("copy") = false);
      a = py::array::ensure(a, py::array::c_style);
      if (a.ndim() != in.rank)
        raise("input " + std::to_string(i) + " has rank " +
              std::to_string(a.ndim()) + ", the program expects " +
              in.shapeString() + " (" + rt::dtypeName(in.dtype) + ")");
      std::vector<int64_t> sizes(a.shape(), a.shape() + a.ndim());
      check(method_->setInput(i, in.dtype, sizes.data(), int(sizes.size()),
                              a.data()));
      keep.push_back(a);
    }
    {
      py::gil_scoped_release release;
      check(method_->execute());
    }
    py::list out;
    for (size_t i = 0; i < method_->numOutputs(); ++i)
      out.append(view(self, method_->output(i)));
    return out;
  }

  /// forward(tokens [S] or [1, S], positions start_pos .. start_pos+S-1).
  py::object forward(py::object self, py::object tokens, int64_t startPos) {
    if (method_->numInputs() != 2 ||
        method_->input(0).dtype != rt::DType::I64 ||
        method_->input(1).dtype != rt::DType::I64 ||
        method_->input(1).rank != 1)
      raise("'" + method_->name() +
            "' is not forward(tokens: i64 [1, S], positions: i64 [S]); use "
            "run()");
    auto t =
        py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(
            tokens);
    if (!t)
      raise("tokens must be a sequence of integers");
    if (!(t.ndim() == 1 || (t.ndim() == 2 && t.shape(0) == 1)))
      raise("tokens must have shape [S] or [1, S]");
    int64_t n = t.ndim() == 1 ? t.shape(0) : t.shape(1);
    if (n == 0)
      raise("tokens is empty");
    if (startPos < 0)
      raise("start_pos must be non-negative");
    positions_.resize(n);
    for (int64_t i = 0; i < n; ++i)
      positions_[i] = startPos + i;
    int64_t tsizes[2] = {1, n};
    int tokenRank = method_->input(0).rank;
    if (tokenRank != 1 && tokenRank != 2)
      raise("the program's token input has rank " + std::to_string(tokenRank));
    check(method_->setInput(0, rt::DType::I64,
                            tokenRank == 2 ? tsizes : tsizes + 1, tokenRank,
                            t.data()));
    check(method_->setInput(1, rt::DType::I64, &n, 1, positions_.data()));
    {
      py::gil_scoped_release release;
      check(method_->execute());
    }
    return view(self, method_->output(0));
  }

  void reset() { module_->resetState(); }

  /// Profiling (etllm/runtime/profile.h): turning it on attaches a fresh
  /// profile to the module; off detaches it and keeps what it recorded.
  void setProfiling(bool on) {
    if (on) {
      profile_ = std::make_unique<rt::OpProfile>();
      module_->context().setProfile(profile_.get());
    } else {
      module_->context().setProfile(nullptr);
    }
  }
  bool profiling() const { return module_->context().profile() != nullptr; }
  /// The last profile as a dict (None before profiling was first on).
  py::object profile() const {
    if (!profile_)
      return py::none();
    py::list ops;
    for (const rt::OpProfile::Row &r : profile_->rows()) {
      py::dict d;
      d["op"] = rt::opInfo(r.op).name;
      d["where"] = rt::whereName(r.where);
      d["calls"] = r.calls;
      d["nodes"] = r.nodes;
      d["seconds"] = double(r.ns) * 1e-9;
      ops.append(d);
    }
    py::dict out;
    out["executions"] = profile_->executions();
    out["seconds"] = double(profile_->executeNs()) * 1e-9;
    out["delegate_calls"] = profile_->delegateCalls();
    out["delegate_seconds"] = double(profile_->delegateNs()) * 1e-9;
    out["ops"] = ops;
    out["table"] = profile_->table();
    return out;
  }

  PyLoraAdapter loadLora(const std::string &path) const {
    auto a = rt::LoraAdapter::load(path, *program_);
    if (!a.ok())
      raise(a.message());
    return {*a};
  }
  void applyLora(const PyLoraAdapter &a, double scale) {
    check(module_->applyLora(a.adapter, scale));
  }
  void setLoraScale(const PyLoraAdapter &a, double scale) {
    check(module_->setLoraScale(*a.adapter, scale));
  }
  void removeLora(const PyLoraAdapter &a) {
    check(module_->removeLora(*a.adapter));
  }
  py::list loraHooks() const {
    py::list l;
    for (const rt::LoraHookInfo &h : program_->loraHooks())
      l.append(py::make_tuple(h.name, h.inFeatures, h.outFeatures));
    return l;
  }
  const std::string &contentHash() const { return program_->contentHash(); }

  py::dict metadata() const {
    const rt::ProgramMetadata &md = program_->metadata();
    py::dict d;
    py::object json = py::module_::import("json");
    d["model_config"] = md.modelConfigJson.empty()
                            ? py::object(py::dict())
                            : json.attr("loads")(md.modelConfigJson);
    d["vocab_size"] = md.vocabSize;
    d["max_seq_len"] = md.maxSeqLen;
    d["bos_id"] = md.bosId;
    d["eos_ids"] = md.eosIds;
    d["etllm_version"] = md.etllmVersion;
    d["pipeline"] = md.pipeline;
    d["config_yaml"] = md.configYaml;
    d["stages"] = md.stages;
    d["inputs"] = md.inputs;
    d["tokenizer"] = md.tokenizer.kind;
    return d;
  }

  std::vector<std::pair<std::string, std::vector<int64_t>>>
  specs(bool outputs) const {
    std::vector<std::pair<std::string, std::vector<int64_t>>> out;
    size_t n = outputs ? method_->numOutputs() : method_->numInputs();
    for (size_t i = 0; i < n; ++i) {
      const rt::Tensor &t = outputs ? method_->output(i) : method_->input(i);
      out.push_back({rt::dtypeName(t.dtype),
                     std::vector<int64_t>(t.sizes, t.sizes + t.rank)});
    }
    return out;
  }

  const std::string &path() const { return path_; }
  std::vector<std::string> methodNames() const {
    return program_->methodNames();
  }

private:
  /// A read-only array over `t` (its current shape) whose base is `self`.
  py::array view(py::object self, const rt::Tensor &t) {
    std::vector<py::ssize_t> shape(t.sizes, t.sizes + t.rank);
    if (t.dtype == rt::DType::BF16) {
      // NumPy has no bfloat16: a float32 copy.
      py::array_t<float> out(shape);
      const uint16_t *src = t.ptr<uint16_t>();
      float *dst = out.mutable_data();
      for (int64_t i = 0, n = t.numel(); i < n; ++i)
        dst[i] = rt::bf16ToFloat(src[i]);
      return out;
    }
    py::object dt = numpyDtype(t.dtype);
    if (dt.is_none())
      raise(std::string("an output of element type ") + rt::dtypeName(t.dtype) +
            " cannot be returned to NumPy");
    py::array a(py::dtype::from_args(dt), shape, {}, t.data, self);
    a.attr("setflags")(py::arg("write") = false);
    return a;
  }

  std::string path_;
  std::shared_ptr<rt::Program> program_;
  std::unique_ptr<rt::OpProfile> profile_; // outlives module_'s use of it
  std::unique_ptr<rt::Module> module_;
  rt::Method *method_ = nullptr;
  std::vector<int64_t> positions_;
};

class PyRunner {
public:
  PyRunner(const std::string &path, const std::string &tokenizer,
           size_t threads, uint64_t maxMemory) {
    registerBackends();
    rt::llm::RunnerOptions o;
    o.tokenizerPath = tokenizer;
    o.numThreads = threads;
    o.maxMemory = maxMemory;
    auto r = rt::llm::Runner::load(path, o);
    if (!r.ok())
      raise(r.message());
    runner_ = std::move(r.value());
  }

  /// Generates; `onText` (if given) receives each piece of text as bytes.
  /// Returns the statistics (the runtime's JSON, parsed).
  py::dict generate(const std::string &prompt, int32_t maxNewTokens,
                    float temperature, float topP, int32_t topK, float minP,
                    float repetitionPenalty, uint64_t seed,
                    const std::vector<std::string> &stop, bool addBos,
                    py::object onText, bool shiftContext, int32_t sinkTokens,
                    const py::list &images) {
    // Preprocessed pixels [3, H, W], or an image split into tiles as
    // (rows, cols, tiles [rows * cols, 3, H, W], global [3, H, W])
    // (Runner.generate converts image files with the program's image
    // processor).
    using Floats =
        py::array_t<float, py::array::c_style | py::array::forcecast>;
    std::vector<rt::llm::ImagePixels> pixels;
    for (py::handle item : images) {
      rt::llm::ImagePixels px;
      Floats a;
      if (py::isinstance<py::tuple>(item)) {
        py::tuple t = py::reinterpret_borrow<py::tuple>(item);
        if (t.size() != 4)
          raise("a split image is (rows, cols, tiles, global)");
        px.rows = t[0].cast<int64_t>();
        px.cols = t[1].cast<int64_t>();
        Floats tiles = Floats::ensure(t[2]);
        a = Floats::ensure(t[3]);
        if (px.rows < 0 || px.cols < 0 || px.rows > 64 || px.cols > 64 ||
            !tiles || tiles.ndim() != 4 ||
            tiles.shape(0) != px.rows * px.cols || tiles.shape(1) != 3)
          raise("a split image's tiles must be float32 [rows * cols, 3, "
                "height, width]");
        const size_t each = size_t(tiles.size() / std::max<py::ssize_t>(
                                                      tiles.shape(0), 1));
        for (py::ssize_t k = 0; k < tiles.shape(0); ++k)
          px.tiles.emplace_back(tiles.data() + size_t(k) * each,
                                tiles.data() + size_t(k + 1) * each);
      } else {
        a = Floats::ensure(item);
      }
      if (!a || a.ndim() != 3 || a.shape(0) != 3)
        raise("an image's pixels must be float32 [3, height, width]");
      px.height = a.shape(1);
      px.width = a.shape(2);
      px.chw.assign(a.data(), a.data() + a.size());
      for (const std::vector<float> &tile : px.tiles)
        if (tile.size() != px.chw.size())
          raise("a split image's tiles must be the global image's size");
      pixels.push_back(std::move(px));
    }
    rt::llm::GenerationConfig c;
    c.maxNewTokens = maxNewTokens;
    c.sampling.temperature = temperature;
    c.sampling.topP = topP;
    c.sampling.topK = topK;
    c.sampling.minP = minP;
    c.sampling.repetitionPenalty = repetitionPenalty;
    c.sampling.seed = seed;
    c.stopStrings = stop;
    c.addBos = addBos;
    c.shiftContext = shiftContext;
    c.sinkTokens = sinkTokens;
    // The runtime's one check of every number (NaN, infinity, ranges).
    rt::Status valid = rt::llm::validate(c);
    if (!valid.ok())
      raise(valid.message());
    std::unique_lock<std::mutex> lock(busy_, std::try_to_lock);
    if (!lock.owns_lock())
      raise("this Runner is already generating (one generation at a time)");
    // The callback runs on this thread; it reacquires the GIL. A Python
    // exception in it stops the generation at the next token.
    std::string pending;
    std::unique_ptr<py::error_already_set> callbackError;
    auto callback = [&](const std::string &piece) {
      if (callbackError || onText.is_none())
        return;
      py::gil_scoped_acquire gil;
      try {
        onText(py::bytes(piece));
      } catch (py::error_already_set &e) {
        callbackError = std::make_unique<py::error_already_set>(std::move(e));
      }
    };
    rt::Result<rt::llm::Stats> stats = [&] {
      py::gil_scoped_release release;
      return runner_->generate(prompt, pixels, c, callback);
    }();
    if (callbackError)
      throw std::move(*callbackError);
    if (!stats.ok())
      raise(stats.message());
    return py::module_::import("json").attr("loads")(stats->toJson());
  }

  int64_t maxSeqLen() const { return runner_->maxSeqLen(); }

  /// preprocessor_config.json of a composite model's program, else None.
  py::object imagePreprocessor() const {
    if (!runner_->vision())
      return py::none();
    return py::str(runner_->vision()->preprocessorJson());
  }

  py::bytes decode(const std::vector<int32_t> &ids) const {
    for (int32_t id : ids)
      if (id < 0 || id >= runner_->tokenizer().vocabSize())
        raise("token id " + std::to_string(id) + " is outside the vocabulary");
    return py::bytes(runner_->tokenizer().decode(ids));
  }

  std::vector<int32_t> encode(const std::string &text, bool addBos) const {
    auto ids = runner_->tokenizer().encode(text, addBos);
    if (!ids.ok())
      raise(ids.message());
    return *ids;
  }

private:
  std::unique_ptr<rt::llm::Runner> runner_;
  std::mutex busy_;
};

} // namespace

void bindRuntime(py::module_ &m) {
  py::class_<PyLoraAdapter>(m, "LoraAdapter",
                            "A LoRA adapter file loaded for a Program.")
      .def_property_readonly(
          "name", [](const PyLoraAdapter &a) { return a.adapter->name(); })
      .def_property_readonly(
          "rank", [](const PyLoraAdapter &a) { return a.adapter->rank(); })
      .def_property_readonly("scaling", [](const PyLoraAdapter &a) {
        return a.adapter->scaling();
      });
  py::class_<PyProgram>(m, "Program", R"doc(
A program file (.pte), loaded and verified, with one instance of its state
(planned memory, KV caches). Outputs are read-only NumPy views of the
program's memory: valid until the next call on this Program.)doc")
      .def(py::init([](const std::filesystem::path &path, size_t threads,
                       const std::string &method, uint64_t maxMemory) {
             return std::make_unique<PyProgram>(path.string(), threads, method,
                                                maxMemory);
           }),
           py::arg("path"), py::arg("threads") = 1,
           py::arg("method") = "forward", py::arg("max_memory") = 0)
      .def(
          "forward",
          [](py::object self, py::object tokens, int64_t startPos) {
            return self.cast<PyProgram &>().forward(self, tokens, startPos);
          },
          py::arg("tokens"), py::arg("start_pos") = 0,
          "Logits of `tokens` at positions start_pos.. (the KV cache keeps "
          "earlier positions): a view, valid until the next call.")
      .def(
          "run",
          [](py::object self, py::args args) {
            std::vector<py::object> arrays;
            for (py::handle a : args)
              arrays.push_back(py::reinterpret_borrow<py::object>(a));
            return self.cast<PyProgram &>().run(self, arrays);
          },
          "Runs the method on its inputs (array-likes, converted to the "
          "program's element types); returns every output as a view, valid "
          "until the next call.")
      .def(
          "run_method",
          [](py::object self, const std::string &name, py::args args) {
            std::vector<py::object> arrays;
            for (py::handle a : args)
              arrays.push_back(py::reinterpret_borrow<py::object>(a));
            PyProgram &p = self.cast<PyProgram &>();
            return p.run(self, arrays, p.methodNamed(name));
          },
          py::arg("name"),
          "Runs another method of the program over this Program's state "
          "(its KV caches: a composite model's `text_decoder` after "
          "`forward`, as the runner chains them); returns its outputs as "
          "views, valid until the next call.")
      .def("reset", &PyProgram::reset,
           "Zeroes the mutable buffers (KV caches): a new sequence.")
      .def(
          "load_lora",
          [](const PyProgram &p, const std::filesystem::path &path) {
            return p.loadLora(path.string());
          },
          py::arg("path"),
          "Loads and checks a LoRA adapter file (etllm-export-lora) made "
          "for this program.")
      .def("apply_lora", &PyProgram::applyLora, py::arg("adapter"),
           py::arg("scale") = 1.0,
           "Applies a loaded adapter with a scale (several add up).")
      .def("set_lora_scale", &PyProgram::setLoraScale, py::arg("adapter"),
           py::arg("scale"))
      .def("remove_lora", &PyProgram::removeLora, py::arg("adapter"))
      .def_property_readonly(
          "lora_hooks", &PyProgram::loraHooks,
          "(module path, in features, out features) of each LoRA hook.")
      .def_property_readonly("content_hash", &PyProgram::contentHash,
                             "The SHA-256 adapter files name (hex; empty "
                             "without LoRA hooks).")
      .def_property_readonly("metadata", &PyProgram::metadata)
      .def_property_readonly(
          "inputs", [](const PyProgram &p) { return p.specs(false); },
          "(dtype, capacity shape) of each input.")
      .def_property_readonly(
          "outputs", [](const PyProgram &p) { return p.specs(true); },
          "(dtype, current shape) of each output.")
      .def_property_readonly("method_names", &PyProgram::methodNames)
      .def_property_readonly("path", &PyProgram::path)
      .def_property("profiling", &PyProgram::profiling,
                    &PyProgram::setProfiling,
                    "True: every call from now on is timed per operator "
                    "(a fresh profile); False: stop (the profile stays).")
      .def_property_readonly(
          "profile", &PyProgram::profile,
          "The profile (None before profiling was first on): executions, "
          "seconds, delegate_calls, delegate_seconds, ops (op, where, "
          "calls, nodes, seconds; most time first) and the markdown table "
          "of etllm-bench --profile. Read it between calls.");

  py::class_<PyRunner>(m, "Runner", R"doc(
The runtime's text generation (runtime/llm Runner, as etllm-run): the
program's tokenizer (or `tokenizer`), one prefill call, then one decode call
per token with the sampler.)doc")
      .def(py::init([](const std::filesystem::path &path,
                       const std::string &tokenizer, size_t threads,
                       uint64_t maxMemory) {
             return std::make_unique<PyRunner>(path.string(), tokenizer,
                                               threads, maxMemory);
           }),
           py::arg("path"), py::arg("tokenizer") = "", py::arg("threads") = 1,
           py::arg("max_memory") = 0)
      .def("generate", &PyRunner::generate, py::arg("prompt"),
           py::arg("max_new_tokens") = 128, py::arg("temperature") = 0.8f,
           py::arg("top_p") = 0.9f, py::arg("top_k") = 0,
           py::arg("min_p") = 0.0f, py::arg("repetition_penalty") = 1.0f,
           py::arg("seed") = 0, py::arg("stop") = std::vector<std::string>(),
           py::arg("add_bos") = true, py::arg("on_text") = py::none(),
           py::arg("shift_context") = false, py::arg("sink_tokens") = 4,
           py::arg("images") = std::vector<py::array_t<float>>())
      .def_property_readonly("image_preprocessor",
                             &PyRunner::imagePreprocessor)
      .def("encode", &PyRunner::encode, py::arg("text"),
           py::arg("add_bos") = true)
      .def("decode", &PyRunner::decode, py::arg("ids"),
           "The bytes of `ids` as the runner prints them one by one.")
      .def_property_readonly("max_seq_len", &PyRunner::maxSeqLen);
}

} // namespace etllm::python
