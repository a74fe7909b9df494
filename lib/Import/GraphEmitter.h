//===- GraphEmitter.h - What the block builders share -----------*- C++ -*-===//
//
// Private to lib/Import. The GraphEmitter creates ops with the current module
// path attached (`etllm.module`), enters module instances and records their
// classes, declares parameters (checking them against the checkpoint) and
// holds the small torch-level helpers every block uses (linear, reshape,
// slice, ...). The blocks themselves are in Blocks/.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_LIB_IMPORT_GRAPHEMITTER_H
#define ETLLM_LIB_IMPORT_GRAPHEMITTER_H

#include "etllm/Dialect/Etllm/EtllmOps.h"
#include "etllm/Formats/Checkpoint.h"
#include "etllm/Models/Registry.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringMap.h"

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace etllm::import {

/// One past the last index, as torch's `x[..., a:]` slices.
inline constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

class GraphEmitter {
public:
  GraphEmitter(mlir::MLIRContext *ctx, mlir::ModuleOp module,
               const formats::Checkpoint &ckpt,
               const formats::ModelConfig &config,
               const models::FamilySpec &family, mlir::Type dtype)
      : ctx(ctx), module(module), ckpt(ckpt), config(config), family(family),
        dtype(dtype), b(ctx), loc(mlir::UnknownLoc::get(ctx)) {}

  mlir::MLIRContext *ctx;
  mlir::ModuleOp module;
  const formats::Checkpoint &ckpt;
  const formats::ModelConfig &config;
  const models::FamilySpec &family;
  /// Activation and weight dtype of the graph.
  mlir::Type dtype;
  mlir::OpBuilder b;
  mlir::Location loc;
  std::vector<std::string> pathStack;
  llvm::StringMap<std::string> moduleClasses;
  /// Buffers updated functionally, written back at the end.
  std::vector<std::pair<std::string, mlir::Value>> cacheWrites;
  /// The first problem found (a missing or misshapen tensor).
  std::string error;

  /// RAII: enter a module instance `path` of class `cls`.
  struct Scope {
    GraphEmitter &e;
    Scope(GraphEmitter &e, const std::string &path, const std::string &cls)
        : e(e) {
      e.pathStack.push_back(path);
      e.moduleClasses[path] = cls;
    }
    ~Scope() { e.pathStack.pop_back(); }
  };

  /// A module class of the family: "Llama" + "Attention".
  std::string cls(llvm::StringRef suffix) const {
    return family.classPrefix + suffix.str();
  }
  /// The path of a module of the family (etllm/Models/Registry.h).
  std::string path(models::HfModule module, int64_t layer = -1) const {
    return models::hfPath(family, module, layer);
  }

  template <typename OpTy, typename... Args> OpTy op(Args &&...args) {
    auto o = b.create<OpTy>(loc, std::forward<Args>(args)...);
    if (!pathStack.empty())
      mlir::etllm::setModulePath(o, pathStack.back());
    return o;
  }
  template <typename OpTy, typename... Args> mlir::Value val(Args &&...args) {
    return op<OpTy>(std::forward<Args>(args)...)->getResult(0);
  }

  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape,
                                    mlir::Type et) {
    return mlir::RankedTensorType::get(shape, et);
  }
  /// A rank-0 constant.
  mlir::Value scalar(double v, mlir::Type et);
  /// Declares (once) and reads the parameter `name` of `shape`.
  mlir::Value param(const std::string &name, llvm::ArrayRef<int64_t> shape);
  /// nn.Linear: x @ W^T (+ b), weight `path`.weight [out, in].
  mlir::Value linear(const std::string &path, mlir::Value x, int64_t out,
                     int64_t in, bool bias);
  /// The family's RMSNorm over the last dimension of x (Blocks/Norm.cpp),
  /// with the config's rms_norm_eps unless `eps` is given (norms the
  /// modeling code builds with their class default).
  mlir::Value rmsNorm(const std::string &path, mlir::Value x, int64_t dim,
                      bool addOne, std::optional<double> eps = std::nullopt);

  mlir::Value reshape(mlir::Value x, llvm::ArrayRef<int64_t> shape) {
    return val<mlir::etllm::ReshapeOp>(x, b.getDenseI64ArrayAttr(shape));
  }
  mlir::Value slice(mlir::Value x, int64_t dim, int64_t start, int64_t end) {
    return val<mlir::etllm::SliceOp>(
        x, b.getI64IntegerAttr(dim), b.getI64IntegerAttr(start),
        b.getI64IntegerAttr(end), b.getI64IntegerAttr(1));
  }
  mlir::Value transpose(mlir::Value x, int64_t d0, int64_t d1) {
    return val<mlir::etllm::TransposeOp>(x, b.getI64IntegerAttr(d0),
                                         b.getI64IntegerAttr(d1));
  }
  mlir::Value unsqueeze(mlir::Value x, int64_t d) {
    return val<mlir::etllm::UnsqueezeOp>(x, b.getI64IntegerAttr(d));
  }
  /// Casts x to element type `et` (no op when it already has it).
  mlir::Value castTo(mlir::Value x, mlir::Type et) {
    auto t = llvm::cast<mlir::RankedTensorType>(x.getType());
    return t.getElementType() == et
               ? x
               : val<mlir::etllm::ConvertOp>(t.clone(et), x);
  }
};

} // namespace etllm::import

#endif // ETLLM_LIB_IMPORT_GRAPHEMITTER_H
