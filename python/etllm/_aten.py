"""Capturing a torch.nn.Module with torch.export into etllm's ATen graph
description.

The module is captured once by ``torch.export.export`` (non-strict, fake
tensors: nothing is computed), with the sequence length as one symbolic
size ``S`` bounded by ``max_seq_len``, then functionalized without
decomposing (``run_decompositions({})``): the graph holds ATen operators as
the module called them (``linear``, ``matmul``, ``softmax``,
``scaled_dot_product_attention`` ...), and the buffers forward updates in
place come back as the graph signature's buffer mutations (the KV caches).
From the exported program:

* every tensor of the module is a named placeholder: a parameter, a buffer
  (persistent or not: integer tables and boolean masks as well as float
  ones), or a constant forward created (``torch.tensor(...)``),
* module boundaries come from each node's ``nn_module_stack`` (the
  innermost module instance and its class),
* every size is an integer or an affine function ``coef * S + off`` of the
  one symbolic size, read from the symbolic shapes torch computed.

The result is the JSON the C++ importer (lib/Import/Aten/) maps
to etllm ops; this module knows nothing about etllm ops.
"""

import math
import operator

import torch
import torch.fx

FORMAT = "etllm.aten_graph"
VERSION = 1

# Buffers (not parameters) with at most this many elements that forward
# never writes become IR constants: RoPE inverse-frequency tables, which the
# source swap reads from the IR. Everything else is a named parameter.
INLINE_BUFFER_ELEMENTS = 256

_DTYPES = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int8: "int8",
    torch.bool: "bool",
}

# Nodes that check what the capture assumed (metadata, value ranges) and
# compute nothing.
_CHECKS = {
    "aten._assert_tensor_metadata.default",
    "aten._assert_scalar.default",
    "aten.sym_constrain_range.default",
    "aten.sym_constrain_range_for_size.default",
    "aten._assert_async.msg",
}


class TraceError(Exception):
    """The module cannot be captured into a graph etllm can import."""


def dtype_name(dtype):
    if dtype not in _DTYPES:
        raise TraceError(
            f"tensors of dtype {dtype} are not supported "
            f"({', '.join(str(d) for d in _DTYPES)})")
    return _DTYPES[dtype]


# --------------------------------------------------------------------------
# Symbolic sizes
# --------------------------------------------------------------------------


class _Affine:
    """Turns torch's symbolic integers into coef * S + off."""

    def __init__(self):
        self.symbol = None  # the sympy symbol of S, once seen

    def __call__(self, v, where):
        """An int, or {"sym": [coef, off]} for a SymInt affine in S."""
        if isinstance(v, bool):
            return v
        if isinstance(v, int):
            return v
        if not isinstance(v, torch.SymInt):
            raise TraceError(f"{where}: {v!r} is not an integer")
        import sympy

        expr = sympy.expand(v.node.expr)
        free = expr.free_symbols
        if not free:
            return int(expr)
        if len(free) > 1:
            raise TraceError(
                f"{where} is {expr}: sizes depend on more than one dynamic "
                "size (only the sequence length S may vary)")
        (sym,) = free
        if self.symbol is None:
            self.symbol = sym
        elif sym != self.symbol:
            raise TraceError(
                f"{where} depends on {sym}, another dynamic size than the "
                f"sequence length ({self.symbol})")
        coef = expr.coeff(sym, 1)
        off = expr.subs(sym, 0)
        if not (coef.is_Integer and off.is_Integer and
                sympy.expand(coef * sym + off - expr) == 0):
            raise TraceError(f"{where} is {expr}: not of the form a * S + b")
        if int(coef) == 0:
            return int(off)
        return {"sym": [int(coef), int(off)]}


# --------------------------------------------------------------------------
# The graph description
# --------------------------------------------------------------------------


def _float_json(v):
    """JSON has no infinities or NaN: those are {"float": "inf"} etc."""
    if math.isfinite(v):
        return v
    return {"float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}


def _data_json(t):
    values = t.detach().flatten().tolist()
    if t.is_floating_point():
        return [_float_json(v) for v in values]
    return values


def _is_sym_node(n):
    """A node that computes a size (sym_size, arithmetic on sizes)."""
    return isinstance(n, torch.fx.Node) and \
        isinstance(n.meta.get("val"), (torch.SymInt, int)) and \
        not isinstance(n.meta.get("val"), bool)


def _named_args(n):
    """The node's arguments by schema name, defaults filled in."""
    if n.target is operator.getitem:
        return {"self": n.args[0], "index": n.args[1]}
    schema = getattr(n.target, "_schema", None)
    if schema is None:
        raise TraceError(f"node {n.name} calls {n.target}, which is not an "
                         "ATen operator")
    out = {}
    for i, a in enumerate(schema.arguments):
        if i < len(n.args):
            out[a.name] = n.args[i]
        elif a.name in n.kwargs:
            out[a.name] = n.kwargs[a.name]
        elif a.has_default_value():
            out[a.name] = a.default_value
    return out


def _target_name(n):
    if n.target is operator.getitem:
        return "getitem"
    return str(n.target)


def _innermost_module(n):
    """(path, class name) of the innermost module that created the node."""
    stack = n.meta.get("nn_module_stack") or {}
    if not stack:
        return "", ""
    entries = [(p, c) for p, c in stack.values() if _is_module_path(p)]
    if not entries:
        return "", ""
    path, cls = entries[-1]
    return path, _class_name(cls)


def _is_module_path(path):
    # torch.export marks nodes it made itself with a placeholder entry.
    return bool(path) and not path.startswith("_empty_nn_module_stack")


def _class_name(cls):
    if not isinstance(cls, str):
        cls = getattr(cls, "__name__", str(cls))
    return cls.rsplit(".", 1)[-1]


class _Describer:
    def __init__(self, ep, module):
        self.ep = ep
        self.module = module
        self.affine = _Affine()
        self.refs = {}       # FX node name -> {"tensor": ...} | {"node": ...}
        self.decls = []
        self.constants = {}
        self.classes = {}
        self.state = {}      # parameter name -> tensor (the checkpoint)

    # ----------------------------------------------------------- values
    def shape(self, val, where):
        return [self.affine(d, f"{where} dimension {i}")
                for i, d in enumerate(val.shape)]

    def arg(self, v, where):
        if isinstance(v, torch.fx.Node):
            if _is_sym_node(v):
                return self.affine(v.meta["val"], where)
            if v.name not in self.refs:
                raise TraceError(f"{where} reads {v.name}, which is not a "
                                 "tensor etllm can import")
            return self.refs[v.name]
        if isinstance(v, (list, tuple)):
            return [self.arg(e, f"{where}[{i}]") for i, e in enumerate(v)]
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, torch.SymInt)):
            return self.affine(v, where)
        if isinstance(v, float):
            return _float_json(v)
        if isinstance(v, torch.dtype):
            return {"dtype": dtype_name(v)}
        if isinstance(v, (torch.device, torch.layout, torch.memory_format)):
            return {"opaque": str(v)}
        raise TraceError(f"{where}: an argument of type {type(v).__name__} "
                         f"({v!r}) cannot be described")

    def meta(self, n):
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor):
            return [{"shape": self.shape(val, n.name),
                     "dtype": dtype_name(val.dtype)}]
        if isinstance(val, (list, tuple)):
            out = []
            for i, v in enumerate(val):
                out.append({"shape": self.shape(v, f"{n.name}[{i}]"),
                            "dtype": dtype_name(v.dtype)}
                           if isinstance(v, torch.Tensor) else None)
            return out or None
        return None

    # ---------------------------------------------------------- tensors
    def tensor(self, target, kind_hint):
        """The tensor a placeholder stands for: a parameter, a buffer or a
        lifted constant of the exported program."""
        ep = self.ep
        if target in ep.state_dict:
            return ep.state_dict[target]
        if target in ep.constants:
            t = ep.constants[target]
            if isinstance(t, torch.Tensor):
                return t
        raise TraceError(f"the exported program has no value for "
                         f"{kind_hint} '{target}'")

    def placeholders(self, mutated):
        from torch.export.graph_signature import InputKind

        specs = self.ep.graph_signature.input_specs
        phs = [n for n in self.ep.graph.nodes if n.op == "placeholder"]
        if len(specs) != len(phs):
            raise TraceError("the exported program's signature does not "
                             "match its graph")
        user = 0
        for spec, p in zip(specs, phs):
            if spec.kind == InputKind.USER_INPUT:
                val = p.meta.get("val")
                if not isinstance(val, torch.Tensor):
                    raise TraceError(f"forward input {user} is not a tensor")
                name = f"input.{user}"
                user += 1
                self.refs[p.name] = {"tensor": name}
                self.decls.append({"kind": "input", "name": name,
                                   "shape": self.shape(val, name),
                                   "dtype": dtype_name(val.dtype)})
                continue
            if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER,
                                 InputKind.CONSTANT_TENSOR):
                raise TraceError(f"forward takes a {spec.kind.name.lower()} "
                                 f"input ({spec.target}); etllm imports "
                                 "parameters, buffers and tensor constants")
            name = spec.target
            self.refs[p.name] = {"tensor": name}
            if not p.users:
                continue
            t = self.tensor(name, spec.kind.name.lower()).detach()
            dtype_name(t.dtype)
            if name in mutated:
                if spec.kind != InputKind.BUFFER:
                    raise TraceError(f"forward writes the parameter '{name}'; "
                                     "only buffers may be updated in place")
                if torch.count_nonzero(t).item() != 0:
                    raise TraceError(
                        f"buffer '{name}' is updated in place and starts "
                        "non-zero; programs start mutable buffers at zero")
                kind = "buffer"
            elif spec.kind != InputKind.PARAMETER and \
                    t.numel() <= INLINE_BUFFER_ELEMENTS:
                kind = "constant"
            else:
                kind = "parameter"
            decl = {"kind": kind, "name": name, "shape": list(t.shape),
                    "dtype": dtype_name(t.dtype)}
            if kind == "constant":
                decl["data"] = _data_json(t)
            elif kind == "parameter":
                self.state[name] = t
            self.decls.append(decl)

    # ------------------------------------------------------------ graph
    def describe(self):
        from torch.export.graph_signature import OutputKind

        out_specs = self.ep.graph_signature.output_specs
        mutated = {s.target for s in out_specs
                   if s.kind == OutputKind.BUFFER_MUTATION}
        for s in out_specs:
            if s.kind not in (OutputKind.USER_OUTPUT,
                              OutputKind.BUFFER_MUTATION):
                raise TraceError(f"forward has a {s.kind.name.lower()} "
                                 f"output ({s.target}); etllm imports "
                                 "outputs and buffer updates")
        self.placeholders(mutated)
        body = []
        outputs, writes = [], []
        for n in self.ep.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                flat = list(n.args[0]) if isinstance(n.args[0], (list, tuple)) \
                    else [n.args[0]]
                if len(flat) != len(out_specs):
                    raise TraceError("the exported program's outputs do not "
                                     "match its signature")
                for spec, o in zip(out_specs, flat):
                    if not isinstance(o, torch.fx.Node) or o.name not in self.refs:
                        raise TraceError("forward returns something that is "
                                         f"not a tensor ({o!r})")
                    if spec.kind == OutputKind.BUFFER_MUTATION:
                        writes.append({"buffer": spec.target,
                                       "value": self.refs[o.name]})
                    else:
                        outputs.append(self.refs[o.name])
                continue
            if n.op == "get_attr":
                raise TraceError(f"node {n.name} reads the attribute "
                                 f"{n.target} (a submodule call or a "
                                 "higher-order operator: not supported)")
            if n.op != "call_function":
                raise TraceError(f"unexpected FX node kind {n.op} ({n.name})")
            target = _target_name(n)
            if target in _CHECKS or _is_sym_node(n):
                continue
            path, cls = _innermost_module(n)
            if path:
                self.classes.setdefault(path, cls)
            self.refs[n.name] = {"node": n.name}
            body.append({
                "name": n.name,
                "target": target,
                "args": {k: self.arg(v, f"{n.name}.{k}")
                         for k, v in _named_args(n).items()},
                "module": path,
                "meta": self.meta(n),
            })
        # Module classes of every instance on the way to a node.
        for n in self.ep.graph.nodes:
            for path, cls in (n.meta.get("nn_module_stack") or {}).values():
                if _is_module_path(path):
                    self.classes.setdefault(path, _class_name(cls))
        return {"tensors": self.decls, "nodes": body, "outputs": outputs,
                "buffer_writes": writes}


# --------------------------------------------------------------------------
# Capture
# --------------------------------------------------------------------------


def _resize(x, dim, length):
    shape = list(x.shape)
    shape[dim] = length
    return torch.zeros(shape, dtype=x.dtype)


def _capture(module, inputs, dyn, max_seq_len):
    dynamic_shapes = None
    if any(d is not None for d in dyn):
        # torch.export's bounds are inclusive; S >= 2 keeps torch from
        # specializing size 1 (a one-token decode step is S = 1 all the
        # same: the program's shapes are bounded, not specialized).
        upper = max(max_seq_len, 2) if max_seq_len else None
        s = torch.export.Dim("S", min=2, max=upper) if upper else \
            torch.export.Dim("S", min=2)
        dynamic_shapes = tuple(None if d is None else {d: s} for d in dyn)
    with torch.no_grad():
        ep = torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes,
                                 strict=False)
        # Functional form (in-place updates become buffer mutations), with
        # no operator decomposed.
        return ep.run_decompositions({})


def _explain(e):
    """One message for a failed capture: what it means for the module, then
    torch.export's own first line."""
    text = str(e).strip()
    first = text.splitlines()[0] if text else type(e).__name__
    if "Constraints violated" in text or "specialized" in text:
        return ("forward depends on the sequence length S through Python "
                "control flow (a branch or a check on a size in S) or fixes "
                f"it; torch.export: {first}")
    if "data-dependent" in text or "GuardOnDataDependent" in type(e).__name__:
        return ("forward branches on the values of a tensor (data-dependent "
                f"control flow); torch.export: {first}")
    return f"torch.export failed: {type(e).__name__}: {first}"


def trace(module, example_inputs, dynamic_dims, max_seq_len=0):
    """Captures `module(*example_inputs)` with torch.export.

    `dynamic_dims` has one entry per input: the dimension that is the
    sequence length S, or None; `max_seq_len` bounds S (0: unbounded).
    Returns (description, state) where state maps parameter names to the
    tensors to store in the checkpoint.
    """
    if not isinstance(module, torch.nn.Module):
        raise TraceError("export_llm needs a torch.nn.Module")
    inputs = tuple(example_inputs)
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor):
            raise TraceError(f"example input {i} is a {type(x).__name__}; "
                             "forward's inputs must be tensors")
        dtype_name(x.dtype)
    if len(dynamic_dims) != len(inputs):
        raise TraceError(f"dynamic_dims has {len(dynamic_dims)} entries for "
                         f"{len(inputs)} inputs")
    for i, (x, d) in enumerate(zip(inputs, dynamic_dims)):
        if d is not None and not (-x.dim() <= d < x.dim()):
            raise TraceError(f"dynamic_dims[{i}] = {d} is not a dimension of "
                             f"input {i} (shape {list(x.shape)})")
    dyn = [None if d is None else d % x.dim()
           for x, d in zip(inputs, dynamic_dims)]
    sizes = {x.shape[d] for x, d in zip(inputs, dyn) if d is not None}
    if len(sizes) > 1:
        raise TraceError("the dynamic dimensions of the example inputs have "
                         f"different sizes ({sorted(sizes)}): they are one "
                         "sequence length")
    if sizes and min(sizes) < 2:
        # torch.export specializes a size-1 example: capture at 2 positions
        # (zeros; nothing is computed). The program still takes one.
        inputs = tuple(x if d is None else _resize(x, d, 2)
                       for x, d in zip(inputs, dyn))
    for name, t in list(module.named_parameters()) + \
            list(module.named_buffers()):
        dtype_name(t.dtype)
    was_training = module.training
    module.eval()
    try:
        ep = _capture(module, inputs, dyn, max_seq_len)
        d = _Describer(ep, module)
        desc = d.describe()
    except TraceError:
        raise
    except Exception as e:  # the capture failed inside torch
        raise TraceError(_explain(e)) from e
    finally:
        module.train(was_training)
    desc.update({"format": FORMAT, "version": VERSION,
                 "module_classes": d.classes})
    return desc, d.state
