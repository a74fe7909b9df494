"""Tracing a torch.nn.Module at ATen level into etllm's ATen graph description.

The module is traced with ``make_fx`` (fake tensors: nothing is computed)
over a functionalized call whose parameters and buffers are inputs, so that

* every tensor of the module is a named placeholder (a parameter, or a
  buffer; the buffers the call mutates come back as ``copy_`` write-backs:
  the mutable KV caches),
* module boundaries are recorded by forward pre/post hooks that keep a
  stack of module paths; every FX node created while a module runs is
  tagged with the innermost path,
* the one dynamic size S (the sequence length) is found by tracing at three
  lengths and comparing: an integer that changes is ``coef * S + off``.

The result is the JSON the C++ importer (lib/Import/AtenImporter.cpp) maps
to etllm ops; this module knows nothing about etllm ops. Two composites
that make_fx decomposes are put back first, because later stages look for
them: ``linear`` (quantization works on linear layers) and ``matmul``
(attention fusion).
"""

import contextlib
import math
import operator

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils.stateless import functional_call

try:  # torch 1.13 ships functionalization in functorch
    from functorch.experimental import functionalize
except ImportError:  # pragma: no cover - newer torch
    from torch.func import functionalize

FORMAT = "etllm.aten_graph"
VERSION = 1

# Buffers (not parameters) with at most this many elements that the module
# never writes become IR constants: RoPE inverse-frequency tables, which the
# source swap reads from the IR. Everything else is a named parameter.
INLINE_BUFFER_ELEMENTS = 256

# The sequence lengths the module is traced at (three: an integer that is
# not affine in S is detected).
TRACE_LENGTHS = (3, 4, 6)

_DTYPES = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int8: "int8",
    torch.bool: "bool",
}


class TraceError(Exception):
    """The module cannot be traced into a graph etllm can import."""


def dtype_name(dtype):
    if dtype not in _DTYPES:
        raise TraceError(
            f"tensors of dtype {dtype} are not supported "
            f"({', '.join(str(d) for d in _DTYPES)})")
    return _DTYPES[dtype]


# --------------------------------------------------------------------------
# Module paths
# --------------------------------------------------------------------------


class _ModuleStack:
    """Forward pre/post hooks that keep the path of the running module."""

    def __init__(self, root):
        self.paths = {}
        self.names = {}
        self.classes = {}
        # Class names now: functional_call swaps in subclasses while tracing.
        for path, m in root.named_modules(remove_duplicate=True):
            self.paths.setdefault(id(m), path)
            self.names.setdefault(id(m), type(m).__name__)
        self.stack = []
        self.handles = []
        for m in root.modules():
            self.handles.append(m.register_forward_pre_hook(self._pre))
            self.handles.append(m.register_forward_hook(self._post))

    def _pre(self, module, args):
        path = self.paths.get(id(module), "")
        self.stack.append(path)
        if path:
            self.classes[path] = self.names.get(id(module),
                                                type(module).__name__)

    def _post(self, module, args, output):
        if self.stack:
            self.stack.pop()

    def current(self):
        for p in reversed(self.stack):
            if p:
                return p
        return ""

    def remove(self):
        for h in self.handles:
            h.remove()


@contextlib.contextmanager
def _tag_nodes(stack):
    """Tags every FX node created while tracing with the module path."""
    original = torch.fx.Graph.create_node

    def create_node(graph, *args, **kwargs):
        n = original(graph, *args, **kwargs)
        n.meta["etllm_module"] = stack.current()
        return n

    torch.fx.Graph.create_node = create_node
    try:
        yield
    finally:
        torch.fx.Graph.create_node = original


# --------------------------------------------------------------------------
# Tracing
# --------------------------------------------------------------------------


def _state(module):
    """Unique tensors of the module: (names, tensors, is_param, aliases)."""
    names, tensors, is_param = [], [], []
    seen = {}
    aliases = {}
    entries = []
    for prefix, m in module.named_modules(remove_duplicate=False):
        dot = prefix + "." if prefix else ""
        for n, t in m._parameters.items():
            entries.append((dot + n, t, True))
        for n, t in m._buffers.items():
            entries.append((dot + n, t, False))
    # Parameters first, as named_parameters() lists them.
    entries.sort(key=lambda e: not e[2])
    for name, t, param in entries:
        if t is None:
            continue
        if id(t) in seen:
            if name not in names:
                aliases[name] = seen[id(t)]
            continue
        seen[id(t)] = len(names)
        names.append(name)
        tensors.append(t)
        is_param.append(param)
    return names, tensors, is_param, aliases


def _resize(x, dim, length):
    shape = list(x.shape)
    shape[dim] = length
    return torch.zeros(shape, dtype=x.dtype)


def _trace_once(module, names, aliases, state, inputs):
    stack = _ModuleStack(module)

    def call(state_list, *args):
        mapping = dict(zip(names, state_list))
        for alias, index in aliases.items():
            mapping[alias] = state_list[index]
        return functional_call(module, mapping, args)

    try:
        with _tag_nodes(stack), torch.no_grad():
            gm = make_fx(functionalize(call), tracing_mode="fake")(
                [t.detach() for t in state], *inputs)
    finally:
        stack.remove()
    return gm, stack.classes


def _shape_of(node):
    tm = node.meta.get("tensor_meta")
    if tm is None:
        return None
    return (list(tm.shape), tm.dtype)


# --------------------------------------------------------------------------
# Putting composites back
# --------------------------------------------------------------------------

_VIEWS = {
    torch.ops.aten.view.default,
    torch.ops.aten._unsafe_view.default,
    torch.ops.aten._reshape_alias.default,
    torch.ops.aten.reshape.default,
}


def _is_view(n):
    return n.op == "call_function" and n.target in _VIEWS


def _meta_shape(n):
    s = _shape_of(n)
    return s[0] if s else None


def _recompose(gm):
    """linear and matmul, which make_fx decomposes, are put back."""
    g = gm.graph
    aten = torch.ops.aten
    for n in list(g.nodes):
        if n.op != "call_function":
            continue
        # x @ W^T (+ b) through t + mm/addmm (+ views around a >2-D input).
        if n.target in (aten.mm.default, aten.addmm.default):
            if n.target == aten.addmm.default:
                if len(n.args) > 3 or n.kwargs.get("beta", 1) != 1 or \
                        n.kwargs.get("alpha", 1) != 1:
                    continue
                bias, a, wt = n.args[0], n.args[1], n.args[2]
            else:
                bias, (a, wt) = None, n.args
            if not (isinstance(wt, torch.fx.Node) and wt.op == "call_function"
                    and wt.target == aten.t.default):
                continue
            w = wt.args[0]
            wshape = _meta_shape(w) if isinstance(w, torch.fx.Node) else None
            if wshape is None or len(wshape) != 2:
                continue
            replace, x = n, a
            users = list(n.users)
            if _is_view(a) and len(users) == 1 and _is_view(users[0]):
                xin = a.args[0]
                xs, out = _meta_shape(xin), _meta_shape(users[0])
                if xs and out and len(xs) > 2 and \
                        out == xs[:-1] + [wshape[0]]:
                    replace, x = users[0], xin
            elif len(_meta_shape(a) or []) != 2:
                continue
            with g.inserting_before(replace):
                lin = g.call_function(aten.linear.default, (x, w, bias))
            lin.meta = dict(replace.meta)
            lin.meta["etllm_module"] = n.meta.get("etllm_module", "")
            replace.replace_all_uses_with(lin)
            continue
        # matmul of >= 3-D operands: expand + view to 3-D + bmm + view.
        if n.target == aten.bmm.default:
            users = list(n.users)
            if len(users) != 1 or not _is_view(users[0]):
                continue
            out = _meta_shape(users[0])

            def source(v, inner):
                # view(expand(X, batch + inner), [prod, *inner]) or view(X).
                if not _is_view(v):
                    return None
                u = v.args[0]
                if isinstance(u, torch.fx.Node) and u.op == "call_function" \
                        and u.target == aten.expand.default:
                    u = u.args[0]
                s = _meta_shape(u)
                if s is None or len(s) < 3 or s[-2:] != inner:
                    return None
                return u

            sa, sb = _meta_shape(n.args[0]), _meta_shape(n.args[1])
            if out is None or sa is None or sb is None or len(out) < 3:
                continue
            a = source(n.args[0], sa[-2:])
            b = source(n.args[1], sb[-2:])
            if a is None or b is None:
                continue
            batch = list(torch.broadcast_shapes(
                tuple(_meta_shape(a)[:-2]), tuple(_meta_shape(b)[:-2])))
            if out != batch + [sa[-2], sb[-1]] or \
                    math.prod(batch) != sa[0]:
                continue
            with g.inserting_before(users[0]):
                mm = g.call_function(aten.matmul.default, (a, b))
            mm.meta = dict(users[0].meta)
            mm.meta["etllm_module"] = n.meta.get("etllm_module", "")
            users[0].replace_all_uses_with(mm)
    _dce(g)


def _dce(g):
    """Removes nodes nothing uses (write-backs are kept)."""
    changed = True
    while changed:
        changed = False
        for n in reversed(list(g.nodes)):
            if n.op in ("placeholder", "output") or n.users:
                continue
            if n.op == "call_function" and n.target == torch.ops.aten.copy_.default:
                continue
            g.erase_node(n)
            changed = True


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


class _Sym:
    """An integer that depends on S: coef * S + off."""

    def __init__(self, coef, off):
        self.coef, self.off = coef, off

    def json(self):
        return {"sym": [self.coef, self.off]}


def _arg_json(v, names):
    if isinstance(v, torch.fx.Node):
        return names[v.name]
    if isinstance(v, (list, tuple)):
        return [_arg_json(e, names) for e in v]
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return _float_json(v)
    if isinstance(v, torch.dtype):
        return {"dtype": dtype_name(v)}
    if isinstance(v, (torch.device, torch.layout, torch.memory_format)):
        return {"opaque": str(v)}
    raise TraceError(f"an argument of type {type(v).__name__} ({v!r}) "
                     "cannot be described")


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


def _describe(gm, names, is_param, state, inputs_meta):
    """One trace as a description (integers still concrete)."""
    nodes = list(gm.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    n_state = len(names)
    refs = {}
    decls = []
    writes = []
    mutated = set()
    for n in nodes:
        if n.op == "call_function" and n.target == torch.ops.aten.copy_.default:
            dst = n.args[0]
            if isinstance(dst, torch.fx.Node) and dst.op == "placeholder":
                mutated.add(dst.name)
    for i, p in enumerate(placeholders):
        if i < n_state:
            name = names[i]
            refs[p.name] = {"tensor": name}
            if not p.users:
                continue
            t = state[i]
            if p.name in mutated:
                if is_param[i]:
                    raise TraceError(f"forward writes the parameter '{name}'; "
                                     "only buffers may be updated in place")
                kind = "buffer"
            elif not is_param[i] and t.numel() <= INLINE_BUFFER_ELEMENTS:
                kind = "constant"
            else:
                kind = "parameter"
            decl = {"kind": kind, "name": name, "shape": list(t.shape),
                    "dtype": dtype_name(t.dtype)}
            if kind == "constant":
                decl["data"] = _data_json(t)
            decls.append(decl)
        else:
            k = i - n_state
            name = f"input.{k}"
            refs[p.name] = {"tensor": name}
            shape, dtype = inputs_meta[k]
            decls.append({"kind": "input", "name": name, "shape": shape,
                          "dtype": dtype_name(dtype)})
    body = []
    outputs = []
    constants = {}
    for n in nodes:
        if n.op == "placeholder":
            continue
        if n.op == "get_attr":  # a tensor created in forward (torch.tensor)
            t = getattr(gm, n.target)
            if t.numel() > INLINE_BUFFER_ELEMENTS:
                raise TraceError(
                    f"forward creates a constant tensor of {t.numel()} "
                    "elements; register it as a buffer or parameter")
            name = f"constant.{n.target}"
            refs[n.name] = {"tensor": name}
            constants[name] = {"kind": "constant", "name": name,
                               "shape": list(t.shape),
                               "dtype": dtype_name(t.dtype),
                               "data": _data_json(t)}
            continue
        if n.op == "output":
            flat, _ = torch.utils._pytree.tree_flatten(n.args[0])
            for o in flat:
                if not isinstance(o, torch.fx.Node):
                    raise TraceError("forward returns something that is not "
                                     f"a tensor ({o!r})")
                outputs.append(refs[o.name])
            continue
        if n.op != "call_function":
            raise TraceError(f"unexpected FX node kind {n.op} ({n.name})")
        if n.target == torch.ops.aten.copy_.default and \
                isinstance(n.args[0], torch.fx.Node) and \
                n.args[0].op == "placeholder":
            dst = refs[n.args[0].name]
            if not dst["tensor"].startswith("input.") and \
                    dst["tensor"] in names:
                writes.append({"buffer": dst["tensor"],
                               "value": _arg_json(n.args[1], refs)})
                continue
            raise TraceError("forward writes its input tensor "
                             f"{dst['tensor']} in place")
        refs[n.name] = {"node": n.name}
        meta = None
        s = _shape_of(n)
        if s is not None:
            meta = [{"shape": s[0], "dtype": dtype_name(s[1])}]
        else:
            # A tuple: the shapes come from the getitem users.
            items = {}
            for u in n.users:
                if u.target is operator.getitem:
                    us = _shape_of(u)
                    if us is not None:
                        items[u.args[1]] = {"shape": us[0],
                                            "dtype": dtype_name(us[1])}
            if items:
                meta = [items.get(i) for i in range(max(items) + 1)]
        body.append({
            "name": n.name,
            "target": _target_name(n),
            "args": {k: _arg_json(v, refs) for k, v in _named_args(n).items()},
            "module": n.meta.get("etllm_module", ""),
            "meta": meta,
        })
    decls.extend(constants.values())
    return {"tensors": decls, "nodes": body, "outputs": outputs,
            "buffer_writes": writes}


def _merge(descs, lengths, path="graph"):
    """The descriptions of traces at `lengths`, with integers that change
    as {"sym": [coef, off]} (checked to be affine in S)."""
    first = descs[0]
    a, b = lengths[0], lengths[1]

    def merge(vals, where):
        v0 = vals[0]
        if isinstance(v0, bool) or v0 is None or isinstance(v0, str):
            if any(v != v0 for v in vals):
                raise TraceError(f"{where} changes with the sequence length "
                                 f"({vals}): the graph depends on it")
            return v0
        if isinstance(v0, int):
            if all(v == v0 for v in vals):
                return v0
            if not all(isinstance(v, int) and not isinstance(v, bool)
                       for v in vals):
                raise TraceError(f"{where} changes type with the sequence "
                                 "length")
            coef, rem = divmod(vals[1] - vals[0], b - a)
            off = vals[0] - coef * a
            if rem or any(v != coef * s + off for v, s in zip(vals, lengths)):
                raise TraceError(
                    f"{where} is {vals} for sequence lengths {list(lengths)}: "
                    "not of the form a * S + b")
            return _Sym(coef, off).json()
        if isinstance(v0, float):
            if any(v != v0 for v in vals):
                raise TraceError(f"{where} ({vals}) depends on the sequence "
                                 "length; only integer sizes may")
            return v0
        if isinstance(v0, list):
            if any(not isinstance(v, list) or len(v) != len(v0) for v in vals):
                raise TraceError(f"{where} changes length with the sequence "
                                 "length: the graph depends on it")
            return [merge([v[i] for v in vals], f"{where}[{i}]")
                    for i in range(len(v0))]
        if isinstance(v0, dict):
            if any(not isinstance(v, dict) or v.keys() != v0.keys()
                   for v in vals):
                raise TraceError(f"{where} differs between traces at different "
                                 "sequence lengths: the graph depends on it")
            return {k: merge([v[k] for v in vals], f"{where}.{k}")
                    for k in v0}
        raise TraceError(f"{where}: cannot compare {v0!r}")

    if any(len(d["nodes"]) != len(first["nodes"]) for d in descs):
        raise TraceError(
            "tracing at sequence lengths " + ", ".join(map(str, lengths)) +
            " gives graphs of different sizes: forward depends on the "
            "sequence length through Python control flow")
    for i, nodes in enumerate(zip(*(d["nodes"] for d in descs))):
        targets = {n["target"] for n in nodes}
        if len(targets) != 1:
            raise TraceError(
                f"node {i} is {' / '.join(sorted(targets))} depending on the "
                "sequence length: forward depends on it through Python "
                "control flow")
    merged = merge(descs, path)
    return merged


def trace(module, example_inputs, dynamic_dims):
    """Traces `module(*example_inputs)`.

    `dynamic_dims` has one entry per input: the dimension that is the
    sequence length S, or None. Returns (description, state) where state
    maps parameter names to the tensors to store in the checkpoint.
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
    names, tensors, is_param, aliases = _state(module)
    for n, t in zip(names, tensors):
        dtype_name(t.dtype)
    was_training = module.training
    module.eval()
    try:
        lengths = TRACE_LENGTHS if any(d is not None for d in dyn) else (None,)
        descs, classes = [], {}
        for length in lengths:
            args = tuple(x if d is None or length is None else
                         _resize(x, d, length) for x, d in zip(inputs, dyn))
            meta = [(list(a.shape), a.dtype) for a in args]
            gm, cls = _trace_once(module, names, aliases, tensors, args)
            classes.update(cls)
            _recompose(gm)
            descs.append(_describe(gm, names, is_param, tensors, meta))
    except TraceError:
        raise
    except Exception as e:  # tracing failed inside torch
        raise TraceError(f"tracing the module failed: {type(e).__name__}: {e}"
                         ) from e
    finally:
        module.train(was_training)
    desc = descs[0] if len(descs) == 1 else _merge(descs, lengths)
    # Buffers must start at zero: programs zero them at load.
    index = {n: i for i, n in enumerate(names)}
    for d in desc["tensors"]:
        if d["kind"] == "buffer":
            t = tensors[index[d["name"]]]
            if torch.count_nonzero(t).item() != 0:
                raise TraceError(
                    f"buffer '{d['name']}' is updated in place and starts "
                    "non-zero; programs start mutable buffers at zero")
    state = {d["name"]: tensors[index[d["name"]]] for d in desc["tensors"]
             if d["kind"] == "parameter"}
    desc.update({"format": FORMAT, "version": VERSION,
                 "module_classes": classes})
    return desc, state
