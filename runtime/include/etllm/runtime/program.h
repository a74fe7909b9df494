//===- program.h - Loading and running program files ------------*- C++ -*-===//
//
// Program: a verified, memory-mapped program file (immutable, shareable
// between threads). Module: one instance of a program with its own planned
// memory and mutable buffers (KV caches); distinct Modules may run on
// distinct threads. Method: one entry point of a Module.
//
// A program file comes from the internet: load() checks the header, runs the
// flatbuffers Verifier, then checks every index, offset, size, dtype, shape
// product and arena bound before anything runs. Errors are values.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_PROGRAM_H
#define ETLLM_RUNTIME_PROGRAM_H

#include "etllm/runtime/kernel.h"
#include "etllm/runtime/lora.h"
#include "etllm/runtime/mapped_file.h"
#include "etllm/runtime/result.h"
#include "etllm/runtime/tensor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace etllm::schema {
struct Program;
} // namespace etllm::schema

namespace etllm::rt {

/// The 64-byte header at offset 0 of every program file.
struct FileHeader {
  char magic[8];             // "ETLLMPTE"
  uint32_t version;          // kProgramFormatVersion
  uint32_t headerSize;       // sizeof(FileHeader)
  uint64_t flatbufferOffset; // from the start of the file
  uint64_t flatbufferSize;
  uint64_t segmentBase; // start of the segment data, aligned
  uint64_t segmentDataSize;
  uint32_t segmentAlignment; // every segment starts at a multiple of this
  uint32_t reserved[3];
};
static_assert(sizeof(FileHeader) == 64, "the header is 64 bytes");

inline constexpr char kProgramMagic[8] = {'E', 'T', 'L', 'L',
                                          'M', 'P', 'T', 'E'};
/// Incremented on incompatible layout changes (docs/ProgramFormat.md). The
/// runtime reads every version from kMinProgramFormatVersion on:
///   1  the first format;
///   2  a quantized activation (QAct) may be per block of 32 values
///      (QuantParams.group_size 32), which version-1 readers would take
///      for per token. The writer uses 2 only for programs that have such
///      a value outside delegate blobs, so others stay readable by older
///      runtimes.
///   3  a quantized weight may be of a ggml block scheme
///      (QuantParams.scheme other than AFFINE, or the cpu blob's
///      Value.scheme), which older readers would take for an affine weight.
///      Used only for programs that have one.
inline constexpr uint32_t kProgramFormatVersion = 3;
inline constexpr uint32_t kMinProgramFormatVersion = 1;

/// Plain-C++ view of the program's metadata.
struct TokenizerMetadata {
  std::string kind; // see schema TokenizerInfo.kind
  const uint8_t *fileData = nullptr;
  size_t fileSize = 0;
  std::string fileName, pre;
  std::vector<std::string> tokens, merges;
  std::vector<float> scores;
  std::vector<int32_t> tokenTypes;
  int64_t bosId = -1, eosId = -1, unkId = -1, padId = -1, eotId = -1;
  bool addBos = true, addSpacePrefix = true;
};
/// The chat template a program carries (schema ChatTemplateInfo); empty
/// `source` when it has none.
struct ChatTemplateMetadata {
  std::string source, bosToken, eosToken;
  std::vector<std::string> stopStrings;
};
struct ProgramMetadata {
  std::string modelConfigJson;
  int64_t vocabSize = 0, maxSeqLen = 0, bosId = -1;
  std::vector<int64_t> eosIds;
  TokenizerMetadata tokenizer;
  std::string etllmVersion, pipeline, configYaml;
  std::vector<std::string> stages;
  std::vector<std::pair<std::string, std::string>> inputs;
  ChatTemplateMetadata chat;
  /// Ring KV caches (schema KvRing; 0 without): the most tokens of a call,
  /// and the attention sinks (> 0: positions may pass maxSeqLen).
  int64_t ringChunk = 0, ringSinks = 0;
  /// The positions one text may take: maxSeqLen, or with attention sinks
  /// (caches that never fill) kUnboundedContext.
  int64_t contextLimit() const {
    return ringSinks > 0 ? kUnboundedContext : maxSeqLen;
  }
  /// The context of a program with attention sinks: positions stay well
  /// inside what float RoPE angles resolve.
  static constexpr int64_t kUnboundedContext = int64_t(1) << 30;
};

/// A loaded and verified program file.
class Program {
public:
  /// Maps and verifies `path`.
  static Result<std::shared_ptr<Program>> load(const std::string &path);
  /// Verifies a program held in memory (copied; `name` is used in errors).
  static Result<std::shared_ptr<Program>>
  loadFromBuffer(const uint8_t *data, size_t size, const std::string &name);

  const std::string &name() const { return name_; }
  const schema::Program &schema() const { return *fb_; }
  const ProgramMetadata &metadata() const { return metadata_; }
  std::vector<std::string> methodNames() const;
  /// Segment bytes (verified to lie inside the file).
  const uint8_t *segmentData(uint32_t index) const;
  size_t segmentSize(uint32_t index) const;
  /// Size of the whole file.
  size_t fileSize() const { return size_; }

  /// The memory an instance (Module) of this program plans, from the
  /// program file alone, before anything is allocated.
  struct PlannedMemory {
    uint64_t arenas = 0;  // every method's planned arenas
    uint64_t buffers = 0; // mutable buffers (KV caches)
    /// Constants held in memory rather than mapped from the file: the whole
    /// file when it was loaded from a buffer (copied), else 0.
    uint64_t constants = 0;
    uint64_t total() const;
  };
  const PlannedMemory &plannedMemory() const { return planned_; }

  /// LoRA hooks (lora.h), by index; empty for a program without them.
  const std::vector<LoraHookInfo> &loraHooks() const { return loraHooks_; }
  /// The largest adapter rank the hooks accept (0 without hooks).
  int64_t loraMaxRank() const { return loraMaxRank_; }
  /// The content hash adapter files name (64 hex digits; empty without
  /// hooks): the SHA-256 of the file before its hash segment.
  const std::string &contentHash() const { return contentHash_; }

private:
  Program() = default;
  static Result<std::shared_ptr<Program>> verify(std::shared_ptr<Program> p);
  std::string name_;
  std::shared_ptr<MappedFile> file_;
  std::vector<uint8_t> owned_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  const schema::Program *fb_ = nullptr;
  const uint8_t *segmentBase_ = nullptr;
  ProgramMetadata metadata_;
  PlannedMemory planned_;
  std::vector<LoraHookInfo> loraHooks_;
  int64_t loraMaxRank_ = 0;
  std::string contentHash_;
};

class Module;
class DelegateInstance;

/// One entry point of a Module.
class Method {
public:
  ~Method();
  const std::string &name() const { return name_; }
  size_t numInputs() const { return inputs_.size(); }
  size_t numOutputs() const { return outputs_.size(); }
  /// The input tensor (its capacity is the planned upper bound).
  const Tensor &input(size_t i) const { return *inputs_[i]; }
  /// Copies `data` (of `dtype` and `sizes`) into input `i`.
  Status setInput(size_t i, DType dtype, const int64_t *sizes, int rank,
                  const void *data);
  /// Runs every instruction. Errors name the program file, the method, the
  /// instruction and its op (and a delegate's node and op).
  Status execute();
  const Tensor &output(size_t i) const { return *outputs_[i]; }
  /// Bytes of planned activation memory.
  size_t plannedBytes() const;

private:
  friend class Module;
  Method() = default;
  struct Instr {
    KernelFn fn = nullptr;
    OpId op = OpId::NumOps;
    int delegate = -1;
    std::vector<Tensor *> inputs, outputs;
    std::vector<int64_t> ints;
    std::vector<double> floats;
  };
  std::string name_;
  Module *module_ = nullptr;
  std::vector<Tensor> values_;
  std::vector<Tensor *> inputs_, outputs_;
  std::vector<Instr> instrs_;
  std::vector<std::unique_ptr<uint8_t[]>> arenas_;
  std::vector<size_t> arenaSizes_;
};

/// Options for a Module instance.
struct ModuleOptions {
  /// Threads for kernels (1 = no pool); at most the machine's hardware
  /// threads (hardwareThreads() in flags.h), else create() fails.
  size_t numThreads = 1;
  /// Kernels to use; default: portableKernels().
  const KernelTable *kernels = nullptr;
  /// The memory budget in bytes: create() refuses, before allocating
  /// anything, a program whose planned memory (Program::plannedMemory())
  /// is larger. 0 = the machine's physical memory (physicalMemoryBytes()).
  uint64_t maxMemory = 0;
};

/// The machine's physical memory in bytes (sysconf), or 2^62 when unknown.
uint64_t physicalMemoryBytes();

/// An instance of a program: planned memory, mutable buffers, delegates.
class Module {
public:
  static Result<std::unique_ptr<Module>>
  create(std::shared_ptr<Program> program, const ModuleOptions &options = {});
  ~Module();
  Program &program() { return *program_; }
  const Program &program() const { return *program_; }
  /// The method `name`, or an error listing the program's methods.
  Result<Method *> method(const std::string &name);
  /// Zeroes the mutable buffers (a new conversation).
  void resetState();
  ExecContext &context() { return *ctx_; }
  /// Bytes of mutable-buffer memory.
  size_t bufferBytes() const;
  /// Number of delegate instances (one per Program delegate).
  size_t numDelegates() const { return delegates_.size(); }
  /// The program constants (indices, ascending) delegate `i` asked for when
  /// it was initialized: the weights a call of it may read. Empty for an
  /// index out of range.
  const std::vector<uint32_t> &delegateConstants(size_t i) const;
  /// The constants among those that delegate `i` only gathers rows from,
  /// with their row counts (ConstantTable::noteGatherTable), ascending.
  const std::vector<std::pair<uint32_t, uint64_t>> &
  delegateGatherTables(size_t i) const;
  /// The id of the backend running delegate `i` (canonicalBackendId of the
  /// program's) and its counters
  /// (DelegateInstance::counters); empty for an index out of range.
  std::string delegateBackend(size_t i) const;
  std::vector<std::pair<std::string, uint64_t>>
  delegateCounters(size_t i) const;

  /// LoRA adapters at run time (lora.h). `applyLora` adds an adapter loaded
  /// for this module's program with user scale `scale` (finite); an
  /// adapter is applied at most once. `setLoraScale` changes its scale,
  /// `removeLora` takes it off (the base output again, bit for bit). None
  /// of them may run while a method of this module executes; errors leave
  /// the applied set as it was.
  Status applyLora(std::shared_ptr<const LoraAdapter> adapter, double scale);
  Status setLoraScale(const LoraAdapter &adapter, double scale);
  Status removeLora(const LoraAdapter &adapter);
  /// The adapters applied, in order, with their scales.
  const std::vector<std::pair<std::shared_ptr<const LoraAdapter>, double>> &
  appliedLoras() const {
    return loraApplied_;
  }

private:
  Module() = default;
  std::shared_ptr<Program> program_;
  std::vector<std::unique_ptr<uint8_t[]>> buffers_;
  std::vector<size_t> bufferSizes_;
  std::vector<std::unique_ptr<Method>> methods_;
  std::vector<std::unique_ptr<DelegateInstance>> delegates_;
  std::vector<std::vector<uint32_t>> delegateConstants_;
  std::vector<std::vector<std::pair<uint32_t, uint64_t>>> delegateGathers_;
  std::unique_ptr<ExecContext> ctx_;
  pthreadpool *pool_ = nullptr;
  std::vector<std::pair<std::shared_ptr<const LoraAdapter>, double>>
      loraApplied_;
  std::vector<LoraHookTerms> loraTerms_;
  Status rebuildLora();
  friend class Method;
};

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_PROGRAM_H

namespace etllm::rt {
/// A readable listing of a program file: header, segments, constants,
/// buffers, each method's values and instructions, metadata. Stable enough
/// for tests (`etllm-translate --pte-to-text`).
std::string dumpProgram(const Program &program);
} // namespace etllm::rt
