//===- Importer.cpp - ATen graph to exported-graph IR ---------------------===//
//
// The driver of the ATen graph importer: tensor declarations, the node loop
// (each node mapped by its ATen target's handler, from the categories'
// tables), outputs and buffer write-backs, module attributes.
//
//===----------------------------------------------------------------------===//
#include "etllm/Import/AtenImporter.h"

#include "Importer.h"

using namespace mlir;
using namespace mlir::etllm;
using namespace mlir::etllm::aten;

const HandlerTable &Importer::handlers() {
  static const HandlerTable table = [] {
    HandlerTable t;
    registerShapeHandlers(t);
    registerElementwiseHandlers(t);
    registerReductionHandlers(t);
    registerLinalgHandlers(t);
    registerCreationHandlers(t);
    registerIndexingHandlers(t);
    return t;
  }();
  return table;
}

LogicalResult Importer::declare(const json &t,
                                const ::etllm::formats::Checkpoint *ckpt) {
  if (!t.is_object() || !t.contains("name") || !t["name"].is_string() ||
      !t.contains("kind") || !t["kind"].is_string() || !t.contains("shape") ||
      !t.contains("dtype"))
    return fail("a tensor declaration needs 'name', 'kind', 'shape' and "
                "'dtype'");
  std::string name = t["name"].get<std::string>();
  std::string kind = t["kind"].get<std::string>();
  std::string what = "tensor '" + name + "'";
  if (name.empty() || name.size() > 1024)
    return fail("a tensor declaration has an empty or too long name");
  if (decls.count(name))
    return fail(what + " is declared twice");
  FailureOr<SymShape> shape = shapeOf(t["shape"], what);
  if (failed(shape))
    return failure();
  FailureOr<Type> et = elementType(t["dtype"], what);
  if (failed(et))
    return failure();
  Decl d;
  d.shape = *shape;
  d.type = tensorType(*shape, *et);
  bool isStatic = d.type.hasStaticShape();
  auto inlineValue = [&]() -> LogicalResult {
    const json &data = t["data"];
    int64_t n = 1;
    for (int64_t dim : d.type.getShape()) {
      if (dim > kMaxInlineElements || n * dim > kMaxInlineElements)
        return fail(what + ": inline values of more than " +
                    std::to_string(kMaxInlineElements) +
                    " elements (put it in the checkpoint)");
      n *= dim;
    }
    if (!data.is_array() || int64_t(data.size()) != n)
      return fail(what + ": 'data' must be a list of " + std::to_string(n) +
                  " numbers");
    SmallVector<Attribute> elems;
    for (const json &e : data) {
      std::optional<double> n = asNumber(e);
      if (!n)
        return fail(what + ": 'data' holds a value that is not a number");
      double v = *n;
      if (isa<FloatType>(*et)) {
        elems.push_back(FloatAttr::get(*et, v));
      } else {
        if (!std::isfinite(v) || v != std::floor(v) || std::abs(v) > 9.0e18)
          return fail(what + ": 'data' holds a non-integer for an integer "
                             "tensor");
        elems.push_back(IntegerAttr::get(*et, int64_t(v)));
      }
    }
    d.value = DenseElementsAttr::get(d.type, elems);
    return success();
  };
  b.setInsertionPoint(fn);
  if (kind == "input") {
    d.kind = Decl::Input;
    SmallVector<Type> ins(fn.getArgumentTypes());
    ins.push_back(d.type);
    fn.setType(b.getFunctionType(ins, {}));
    d.input = fn.getBody().front().addArgument(d.type, loc);
  } else if (kind == "parameter") {
    d.kind = Decl::Parameter;
    if (!isStatic)
      return fail(what + ": a parameter needs a static shape");
    // The checkpoint tensor's storage type, for the quantize pass (exact
    // GGUF blocks), as the graph builder records it.
    StringAttr sourceDtype;
    if (t.contains("data")) {
      if (failed(inlineValue()))
        return failure();
    } else if (!ckpt) {
      return fail(what + ": a parameter without inline 'data' needs the "
                         "graph's 'checkpoint'");
    } else {
      const ::etllm::formats::TensorRef *ref = ckpt->find(name);
      if (!ref)
        return fail(what + " is not in the checkpoint " + ckpt->path());
      if (ref->shape != std::vector<int64_t>(d.type.getShape().begin(),
                                             d.type.getShape().end()))
        return fail(
            what + " has shape " + ::etllm::formats::shapeToString(ref->shape) +
            " in the checkpoint " + ckpt->path() + ", not " + shapeStr(*shape));
      sourceDtype = b.getStringAttr(::etllm::formats::dtypeName(ref->dtype));
    }
    b.create<ParameterOp>(loc, name, d.type, d.value, StringAttr(),
                          IntegerAttr(), sourceDtype);
  } else if (kind == "buffer") {
    d.kind = Decl::Buffer;
    if (!isStatic)
      return fail(what + ": a buffer needs a static shape");
    b.create<BufferOp>(loc, name, d.type);
  } else if (kind == "constant") {
    d.kind = Decl::Constant;
    if (!isStatic)
      return fail(what + ": a constant needs a static shape");
    if (failed(inlineValue()))
      return failure();
  } else {
    return fail(what + ": unknown kind '" + kind +
                "' (input, parameter, buffer, constant)");
  }
  decls.emplace(name, std::move(d));
  return success();
}

LogicalResult Importer::importNode(const json &n) {
  node = &n;
  diagText.clear();
  poisonedUse = false;
  if (!n.is_object() || !n.contains("name") || !n["name"].is_string() ||
      !n.contains("target") || !n["target"].is_string() ||
      !n.contains("args") || !n["args"].is_object()) {
    nodeName = "?";
    target = "?";
    modulePath.clear();
    problems.push_back("a node needs 'name', 'target' and an 'args' object");
    return failure();
  }
  nodeName = n["name"].get<std::string>();
  target = n["target"].get<std::string>();
  modulePath = n.contains("module") && n["module"].is_string()
                   ? n["module"].get<std::string>()
                   : "";
  lastResultShape.clear();
  if (nodeValues.count(nodeName) || poisoned.count(nodeName)) {
    problems.push_back("node '" + nodeName + "' is defined twice");
    return failure();
  }
  auto it = handlers().find(target);
  if (it == handlers().end()) {
    auto &paths = unsupported[target];
    if (!llvm::is_contained(paths, where()))
      paths.push_back(where());
    poisoned.insert(nodeName);
    return failure();
  }
  b.setInsertionPointToEnd(&fn.getBody().front());
  if (failed(it->second(*this, n))) {
    poisoned.insert(nodeName);
    if (!poisonedUse || !diagText.empty())
      problems.push_back(
          target + " (node '" + nodeName + "' at " + where() + "): " +
          (diagText.empty() ? std::string("cannot be mapped") : diagText));
    return failure();
  }
  return success();
}

llvm::Expected<OwningOpRef<ModuleOp>> Importer::run(const json &root) {
  ctx->getOrLoadDialect<EtllmDialect>();
  ctx->getOrLoadDialect<func::FuncDialect>();
  if (!root.is_object() || root.value("format", "") != "etllm.aten_graph")
    return makeError(source + ": not an ATen graph description (no "
                              "\"format\": \"etllm.aten_graph\")");
  if (!root.contains("version") || root["version"] != 1)
    return makeError(source + ": unsupported ATen graph version (expected 1)");
  for (const char *key : {"tensors", "nodes", "outputs"})
    if (!root.contains(key) || !root[key].is_array())
      return makeError(source + ": '" + key + "' must be a list");

  module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  fn = b.create<func::FuncOp>(loc, "forward", b.getFunctionType({}, {}));
  fn.addEntryBlock();

  // The checkpoint holding the parameters (opened to check them).
  std::unique_ptr<::etllm::formats::Checkpoint> ckpt;
  if (root.contains("checkpoint") && !root["checkpoint"].is_null()) {
    if (!root["checkpoint"].is_string())
      return makeError(source + ": 'checkpoint' is not a string");
    std::string path = root["checkpoint"].get<std::string>();
    ::etllm::formats::OpenOptions oo;
    oo.validateTensors = false;
    auto opened = ::etllm::formats::openCheckpoint(path, oo);
    if (!opened.ok())
      return makeError(source + ": " + opened.message());
    ckpt = std::move(opened.value());
    (*module)->setAttr(EtllmDialect::kCheckpointAttrName,
                       b.getStringAttr(path));
  }
  node = &root;
  for (const json &t : root["tensors"])
    if (failed(declare(t, ckpt.get())))
      return makeError(source + ": " + diagText);

  for (const json &n : root["nodes"])
    (void)importNode(n);

  // Outputs and write-backs.
  node = &root;
  nodeName.clear();
  modulePath.clear();
  b.setInsertionPointToEnd(&fn.getBody().front());
  SmallVector<Value> outputs;
  bool outputsOk = true;
  for (const json &o : root["outputs"]) {
    diagText.clear();
    poisonedUse = false;
    FailureOr<Value> v = valueOf(o, "an output");
    if (failed(v)) {
      outputsOk = false;
      if (!poisonedUse)
        problems.push_back("output: " + diagText);
      continue;
    }
    outputs.push_back(*v);
  }
  if (root.contains("buffer_writes")) {
    if (!root["buffer_writes"].is_array())
      return makeError(source + ": 'buffer_writes' must be a list");
    for (const json &w : root["buffer_writes"]) {
      diagText.clear();
      poisonedUse = false;
      if (!w.is_object() || !w.contains("buffer") || !w["buffer"].is_string() ||
          !w.contains("value")) {
        problems.push_back("a buffer write needs 'buffer' and 'value'");
        continue;
      }
      std::string name = w["buffer"].get<std::string>();
      auto it = decls.find(name);
      if (it == decls.end() || it->second.kind != Decl::Buffer) {
        problems.push_back("buffer write to '" + name +
                           "', which is not a declared buffer");
        continue;
      }
      FailureOr<Value> v = valueOf(w["value"], "the value written to " + name);
      if (failed(v)) {
        if (!poisonedUse)
          problems.push_back("buffer write: " + diagText);
        continue;
      }
      if (typeOf(*v).getShape() != it->second.type.getShape()) {
        problems.push_back("the value written to buffer '" + name +
                           "' has a different shape than the buffer");
        continue;
      }
      Value val = convert(*v, it->second.type.getElementType());
      if (val)
        b.create<BufferWriteOp>(loc, val, FlatSymbolRefAttr::get(ctx, name));
    }
  }

  if (!unsupported.empty() || !problems.empty() || !outputsOk) {
    std::string msg = source + ": the graph has operations etllm cannot map";
    if (!unsupported.empty()) {
      msg += "\n  not supported:";
      size_t listed = 0;
      for (auto &[t, paths] : unsupported) {
        if (++listed > 50) {
          msg += "\n    ... and " + std::to_string(unsupported.size() - 50) +
                 " more operators";
          break;
        }
        msg += "\n    " + t + " at ";
        for (size_t i = 0; i < paths.size() && i < 8; ++i)
          msg += (i ? ", " : "") + paths[i];
        if (paths.size() > 8)
          msg += " and " + std::to_string(paths.size() - 8) + " more";
      }
    }
    if (!problems.empty()) {
      msg += "\n  not mapped:";
      for (size_t i = 0; i < problems.size() && i < 20; ++i)
        msg += "\n    " + problems[i];
      if (problems.size() > 20)
        msg +=
            "\n    ... and " + std::to_string(problems.size() - 20) + " more";
    }
    return makeError(msg);
  }
  SmallVector<Type> resultTypes;
  for (Value v : outputs)
    resultTypes.push_back(v.getType());
  fn.setType(b.getFunctionType(fn.getArgumentTypes(), resultTypes));
  b.create<func::ReturnOp>(loc, outputs);

  // Module attributes.
  if (root.contains("module_classes")) {
    const json &mc = root["module_classes"];
    if (!mc.is_object())
      return makeError(source + ": 'module_classes' must be an object");
    SmallVector<NamedAttribute> classes;
    for (auto it = mc.begin(); it != mc.end(); ++it) {
      if (!it.value().is_string() || it.key().empty())
        return makeError(source + ": 'module_classes' maps paths to class "
                                  "names (strings)");
      classes.push_back(b.getNamedAttr(
          it.key(), b.getStringAttr(it.value().get<std::string>())));
    }
    (*module)->setAttr(EtllmDialect::kModuleClassesAttrName,
                       b.getDictionaryAttr(classes));
  }
  if (root.contains("model_config") && !root["model_config"].is_null()) {
    if (!root["model_config"].is_object())
      return makeError(source + ": 'model_config' must be an object");
    std::string err;
    FailureOr<ModelConfigAttr> cfg =
        modelConfigAttr(b, root["model_config"], err);
    if (failed(cfg))
      return makeError(source + ": " + err);
    setModelConfig(*module, *cfg);
  }
  std::string diag;
  ScopedDiagnosticHandler h(ctx, [&](Diagnostic &d) {
    llvm::raw_string_ostream os(diag);
    os << "\n  " << d;
    return success();
  });
  if (failed(verify(*module)))
    return makeError(source + ": the imported graph does not verify:" + diag);
  return std::move(module);
}

namespace etllm {

llvm::Expected<OwningOpRef<ModuleOp>> importAtenGraph(MLIRContext *context,
                                                      llvm::StringRef text,
                                                      llvm::StringRef source) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception &e) {
    return makeError(source + ": invalid JSON: " + e.what());
  }
  Importer importer(context, source.str());
  return importer.run(root);
}

std::vector<std::string> supportedAtenOps() {
  std::vector<std::string> out;
  for (auto &e : Importer::handlers())
    if (e.getKey() != "getitem")
      out.push_back(e.getKey().str());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace etllm
