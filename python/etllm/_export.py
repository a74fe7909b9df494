"""Exporting: a checkpoint (as etllm-export), a Meta checkpoint, a model in
the local Hugging Face cache, or any torch.nn.Module (export_llm).

Everything after the trace is C++: the configuration parser, the importers,
the Stage pipeline and the serializer are the ones etllm-export runs
(lib/Pipeline/Export.cpp), reached through etllm._etllm.
"""

import argparse
import json
import os
import sys
import tempfile

from . import _etllm
from ._etllm import Error, ExportConfig

__all__ = ["export", "export_llm", "export_meta", "load_config", "main",
           "write_safetensors"]


class ExportError(Error):
    """An export failed (bad input, unsupported operation, ...)."""


# --------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------


def _yaml_value(v):
    """A Python value in YAML syntax (JSON is valid YAML flow syntax)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float, str, list, tuple)):
        return json.dumps(list(v) if isinstance(v, tuple) else v)
    raise ExportError(f"export config value {v!r} is not a string, number, "
                      "boolean or list")


def _flatten(d, prefix=""):
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _flatten(v, key + ".")
        else:
            yield key, v


def load_config(config=None, overrides=()):
    """An ExportConfig from None (the defaults), a path to an
    export_config.yaml, a dict (nested like the YAML or with dotted keys) or
    an ExportConfig, then `overrides` ("key=value" strings) on top. Parsing
    and validation are the C++ parser's: the same keys and errors as
    etllm-export."""
    if config is None:
        c = ExportConfig()
    elif isinstance(config, ExportConfig):
        c = ExportConfig.from_text(config.to_yaml(), "<ExportConfig>")
    elif isinstance(config, (str, os.PathLike)):
        c = ExportConfig.from_file(os.fspath(config))
    elif isinstance(config, dict):
        c = ExportConfig()
        for key, value in _flatten(config):
            c.set(f"{key}={_yaml_value(value)}")
    else:
        raise ExportError("config must be None, a path to an "
                          "export_config.yaml, a dict or an ExportConfig")
    for o in overrides:
        c.set(o)
    return c


# --------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------


def export(model=None, output=None, config=None, *, hf_id=None,
           tokenizer=None, dump_dir=None, stop_after=None, progress=None):
    """etllm-export from Python: `model` (a Hugging Face directory, a .gguf
    or a llama2.c .bin) or `hf_id` (a model in the local hub cache) to
    `output` (.pte program or .mlir IR)."""
    if (model is None) == (hf_id is None):
        raise ExportError("give one of model or hf_id")
    if not output:
        raise ExportError("output (a .pte or .mlir path) is required")
    if hf_id is not None:
        model = _etllm.resolve_hf_id(hf_id)
    _etllm.export_checkpoint(
        os.fspath(model), load_config(config), os.fspath(output),
        os.fspath(tokenizer) if tokenizer else "",
        os.fspath(dump_dir) if dump_dir else "", stop_after or "", progress)
    return os.fspath(output)


def export_meta(checkpoint, params, output, config=None, **kwargs):
    """A Meta checkpoint (consolidated.00.pth + params.json) to `output`.

    It is converted to a Hugging Face directory first (see _meta.py): in a
    temporary directory for a program output, next to the output
    (<output>.checkpoint/) for an IR output, which refers to it."""
    from . import _meta

    output = os.fspath(output)
    try:
        if output.endswith(".mlir"):
            hf = _meta.convert(checkpoint, params, output + ".checkpoint")
            return export(hf, output, config, **kwargs)
        with tempfile.TemporaryDirectory(prefix="etllm-meta-") as tmp:
            hf = _meta.convert(checkpoint, params, tmp)
            return export(hf, output, config, **kwargs)
    except _meta.MetaCheckpointError as e:
        raise ExportError(str(e)) from None


# --------------------------------------------------------------------------
# nn.Module
# --------------------------------------------------------------------------


def write_safetensors(path, tensors, metadata=None):
    """Writes `tensors` (name -> torch.Tensor) as a .safetensors file,
    streamed by the C++ writer (the format etllm-export reads)."""
    import torch

    names = {torch.float32: "F32", torch.float16: "F16",
             torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32",
             torch.int8: "I8", torch.bool: "BOOL"}
    w = _etllm.SafetensorsWriter()
    w.set_metadata("format", "pt")
    for k, v in (metadata or {}).items():
        w.set_metadata(k, v)
    items = list(tensors.items())
    for name, t in items:
        if t.dtype not in names:
            raise ExportError(f"tensor '{name}' has dtype {t.dtype}, which a "
                              "checkpoint cannot hold")
        w.add_tensor(name, names[t.dtype], list(t.shape))
    w.open(path)
    for name, t in items:
        t = t.detach().contiguous().cpu()
        w.write(t.view(torch.int16).numpy() if t.dtype == torch.bfloat16
                else t.numpy())
    w.finish()


def _auto_dynamic_dims(inputs):
    """forward(tokens [1, S], positions [S]) (integer tensors): the sequence
    dimension of both; anything else: static."""
    import torch

    if len(inputs) == 2 and all(isinstance(x, torch.Tensor) for x in inputs):
        tok, pos = inputs
        if not tok.is_floating_point() and not pos.is_floating_point() and \
                tok.dim() == 2 and tok.shape[0] == 1 and pos.dim() == 1 and \
                pos.shape[0] == tok.shape[1]:
            return [1, 0]
    return [None] * len(inputs)


def _model_config(desc, user, max_seq_len, inputs):
    """etllm.model_config for a traced module: the user's keys, the bound of
    the sequence dimension, and for forward(tokens, positions) -> logits the
    vocabulary size."""
    cfg = dict(user or {})
    for k, v in cfg.items():
        if not isinstance(k, str):
            raise ExportError(f"model_config key {k!r} is not a string")
    if max_seq_len:
        cfg.setdefault("max_seq_len", max_seq_len)
    if _auto_dynamic_dims(inputs) == [1, 0] and desc["outputs"]:
        first = desc["outputs"][0]
        for n in desc["nodes"]:
            if first.get("node") == n["name"] and n["meta"]:
                last = n["meta"][0]["shape"][-1] if n["meta"][0]["shape"] \
                    else None
                if isinstance(last, int):
                    cfg.setdefault("vocab_size", last)
    return cfg


def export_llm(module, example_inputs, config=None, *, output=None,
               model_config=None, dynamic_dims="auto", tokenizer=None,
               dump_dir=None, stop_after=None, progress=None, threads=1,
               decoder=None, image_preprocessor=None, image_token_id=None):
    """Exports any torch.nn.Module through etllm's stages and serializer.

    With `decoder` (a checkpoint: a Hugging Face directory, a .gguf), the
    module is a vision encoder, forward(pixels f32 [1, 3, S, S]) ->
    features [1, N, hidden], composed with that decoder into one composite
    program (`forward`, `vision_encoder`, `text_decoder`; the runner's
    images go through it). `image_preprocessor` (a preprocessor_config.json
    path or its dict) says how an image becomes the pixels; `image_token_id`
    the token standing for an image's positions (default 0). `config`
    applies to the whole program (docs/Python.md, "A vision encoder of your
    own").

    The module is traced at ATen level on `example_inputs` (a tuple of
    tensors; see docs/Python.md for what is supported), its tensors become
    named parameters streamed into a safetensors checkpoint, buffers it
    updates in place (index_put_, index_copy_, copy_) become mutable
    buffers, and module boundaries are kept. `config` is an
    export_config.yaml path, dict or ExportConfig; `model.max_seq_len`
    bounds the dynamic dimension.

    dynamic_dims: one entry per input, the dimension that is the sequence
    length S (or None). "auto": [1, 0] for forward(tokens [1, S],
    positions [S]), else all static.

    model_config: keys for etllm.model_config (e.g. num_attention_heads,
    num_key_value_heads, head_dim, rms_norm_eps, bos_token_id,
    eos_token_ids), which later stages (the source swap) read.

    Returns the loaded etllm.Program for a .pte output (or, with no output,
    a program built in a temporary file), None for an .mlir output.
    """
    import torch

    from . import _aten

    if decoder is not None:
        return _export_composite(
            module, example_inputs, config, decoder, image_preprocessor,
            image_token_id, output=output, model_config=model_config,
            tokenizer=tokenizer, dump_dir=dump_dir, stop_after=stop_after,
            progress=progress, threads=threads)
    if image_preprocessor is not None or image_token_id is not None:
        raise ExportError("image_preprocessor and image_token_id go with "
                          "decoder (a vision encoder composed with it)")
    cfg = load_config(config)
    inputs = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) \
        else (example_inputs,)
    if cfg.is_explicit("model.last_logits_only"):
        raise ExportError("model.last_logits_only applies to checkpoints: a "
                          "module returns what its forward returns")
    if cfg.is_explicit("model.dtype"):
        want = cfg.get("model.dtype")
        have = {p.dtype for p in module.parameters() if p.is_floating_point()}
        names = {torch.float32: "float32", torch.float16: "float16",
                 torch.bfloat16: "bfloat16"}
        if any(names.get(d) != want for d in have):
            raise ExportError(
                f"model.dtype is {want} but the module's parameters are "
                f"{', '.join(sorted(str(d) for d in have))}: convert the "
                "module (e.g. module.to(torch.float16)) before exporting")
    if dynamic_dims == "auto":
        dynamic_dims = _auto_dynamic_dims(inputs)
    has_dynamic = any(d is not None for d in dynamic_dims)
    max_seq_len = cfg.get("model.max_seq_len")
    if has_dynamic and max_seq_len <= 0:
        raise ExportError(
            "export_llm: set model.max_seq_len (the bound of the sequence "
            "dimension, at most the length of the module's KV caches)")
    try:
        desc, state = _aten.trace(module, inputs, list(dynamic_dims),
                                  max_seq_len if has_dynamic else 0)
    except _aten.TraceError as e:
        raise ExportError(f"export_llm: {e}") from None
    desc["model_config"] = _model_config(desc, model_config,
                                         max_seq_len if has_dynamic else 0,
                                         inputs)

    out = os.fspath(output) if output is not None else None
    if out is not None and not (out.endswith(".pte") or out.endswith(".mlir")):
        raise ExportError(f"output '{out}' must end in .pte or .mlir")
    to_ir = out is not None and out.endswith(".mlir")
    tmp = tempfile.TemporaryDirectory(prefix="etllm-export-")
    try:
        # The weights: next to an IR output (it refers to them), else in the
        # temporary directory until the program is written.
        ckpt = (out[:-len(".mlir")] + ".safetensors") if to_ir else \
            os.path.join(tmp.name, "weights.safetensors")
        write_safetensors(ckpt, state)
        desc["checkpoint"] = os.path.abspath(ckpt)
        target = out if out is not None else os.path.join(tmp.name,
                                                          "model.pte")
        _etllm.export_aten_graph(
            json.dumps(desc), cfg, target,
            os.fspath(tokenizer) if tokenizer else "",
            os.fspath(dump_dir) if dump_dir else "", stop_after or "",
            progress)
        if to_ir:
            return None
        # Mapped, the program stays valid after the temporary file is gone.
        return _etllm.Program(target, threads)
    except Error as e:
        raise ExportError(str(e)) from None
    finally:
        tmp.cleanup()


def _export_composite(encoder, example_inputs, config, decoder,
                      image_preprocessor, image_token_id, *, output,
                      model_config, tokenizer, dump_dir, stop_after,
                      progress, threads):
    """export_llm(encoder, ..., decoder=...): the encoder traced to IR (its
    weights beside it), then etllm-export of the decoder with
    model.vision_encoder naming that IR."""
    if image_preprocessor is None:
        raise ExportError("export_llm with a decoder needs image_preprocessor "
                          "(a preprocessor_config.json path or dict)")
    out = os.fspath(output) if output is not None else None
    if out is not None and not (out.endswith(".pte") or out.endswith(".mlir")):
        raise ExportError(f"output '{out}' must end in .pte or .mlir")
    tmp = tempfile.TemporaryDirectory(prefix="etllm-compose-")
    try:
        # An IR output refers to the encoder's IR and weights: beside it.
        stem = out[:-len(".mlir")] + ".encoder" if out and \
            out.endswith(".mlir") else os.path.join(tmp.name, "encoder")
        n = len(example_inputs) if isinstance(example_inputs,
                                              (tuple, list)) else 1
        export_llm(encoder, example_inputs, None, output=stem + ".mlir",
                   model_config=model_config, dynamic_dims=[None] * n,
                   stop_after="import")
        if isinstance(image_preprocessor, dict):
            pre = stem + ".preprocessor_config.json"
            with open(pre, "w") as f:
                json.dump(image_preprocessor, f)
        else:
            pre = os.fspath(image_preprocessor)
        overrides = [f"model.vision_encoder={os.path.abspath(stem + '.mlir')}",
                     f"model.image_preprocessor={os.path.abspath(pre)}"]
        if image_token_id is not None:
            overrides.append(f"model.image_token_id={int(image_token_id)}")
        cfg = load_config(config, overrides)
        target = out if out is not None else os.path.join(tmp.name,
                                                          "model.pte")
        try:
            _etllm.export_checkpoint(
                os.fspath(decoder), cfg, target,
                os.fspath(tokenizer) if tokenizer else "",
                os.fspath(dump_dir) if dump_dir else "", stop_after or "",
                progress)
        except Error as e:
            raise ExportError(str(e)) from None
        if target.endswith(".mlir"):
            return None
        return _etllm.Program(target, threads)
    finally:
        tmp.cleanup()


# --------------------------------------------------------------------------
# python3 -m etllm.export_llm
# --------------------------------------------------------------------------


def _parser():
    p = argparse.ArgumentParser(
        prog="python3 -m etllm.export_llm",
        description="Export a model to an etllm program file (.pte) or IR "
                    "(.mlir): a Meta checkpoint (--check_point + "
                    "--model_config), a model in the local Hugging Face "
                    "cache (--hf_id) or any checkpoint etllm-export reads "
                    "(--model), configured by an export_config.yaml "
                    "(docs/generated/ExportConfig.md).")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--check_point", "--check-point", metavar="CKPT",
                     help="Meta checkpoint: consolidated.00.pth, or the "
                          "directory holding it")
    src.add_argument("--hf_id", "--hf-id", metavar="ORG/NAME[@REV]",
                     help="a model in the local Hugging Face hub cache "
                          "(HF_HUB_CACHE, HF_HOME, ~/.cache/huggingface/hub); "
                          "never downloads")
    src.add_argument("--model", metavar="PATH",
                     help="a Hugging Face directory, .gguf or llama2.c .bin")
    p.add_argument("--model_config", "--model-config", metavar="PARAMS",
                   help="Meta's params.json (default: next to --check_point)")
    p.add_argument("--export_config", "--export-config", "--config",
                   metavar="YAML", help="export_config.yaml")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override one config key (repeatable)")
    p.add_argument("--pipeline", metavar="NAME",
                   help="shorthand for --set pipeline.name=NAME")
    p.add_argument("--tokenizer", metavar="PATH",
                   help="tokenizer file to embed in the program")
    p.add_argument("--dump_dir", "--dump-dir", metavar="DIR",
                   help="write the IR after every stage as NN-<stage>.mlir")
    p.add_argument("--stop_after_stage", "--stop-after-stage", metavar="STAGE",
                   help="stop after this stage (e.g. import; needs .mlir)")
    p.add_argument("--quiet", action="store_true", help="no progress")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="the program (.pte) or IR (.mlir) to write")
    return p


def main(argv=None):
    args = _parser().parse_args(argv)
    overrides = list(args.set)
    if args.pipeline:
        overrides.append(f"pipeline.name={args.pipeline}")

    def progress(line):
        print(f"[export_llm] {line}", file=sys.stderr, flush=True)

    kwargs = dict(tokenizer=args.tokenizer, dump_dir=args.dump_dir,
                  stop_after=args.stop_after_stage,
                  progress=None if args.quiet else progress)
    try:
        config = load_config(args.export_config, overrides)
        if args.check_point:
            params = args.model_config
            if params is None:
                base = args.check_point if os.path.isdir(args.check_point) \
                    else os.path.dirname(args.check_point)
                params = os.path.join(base, "params.json")
            export_meta(args.check_point, params, args.output, config,
                        **kwargs)
        elif args.model_config:
            raise ExportError("--model_config goes with --check_point "
                              "(Meta's params.json)")
        elif args.hf_id:
            export(None, args.output, config, hf_id=args.hf_id, **kwargs)
        else:
            export(args.model, args.output, config, **kwargs)
    except Error as e:
        print(f"export_llm: error: {e}", file=sys.stderr)
        return 1
    return 0
