"""etllm from Python: export models to program files and run them.

The package binds etllm's C++ compiler and runtime (the extension
etllm._etllm); nothing is reimplemented here but the tracing of a
torch.nn.Module. See docs/Python.md.

    import etllm
    # Any torch.nn.Module, traced at ATen level:
    program = etllm.export_llm(module, (tokens, positions),
                               {"model": {"max_seq_len": 128}},
                               output="model.pte")
    logits = program.forward([1, 15043], start_pos=0)   # NumPy, no copy
    # A checkpoint, as etllm-export:
    etllm.export("path/to/hf-dir", "model.pte", "export_config.yaml")
    # Text, through the runtime's tokenizer and sampler:
    for piece in etllm.Runner("model.pte").generate("Once upon a time"):
        print(piece, end="")

The command line: python3 -m etllm.export_llm --help
"""

from ._etllm import (Error, ExportConfig, Tester, export_config_schema,
                     hf_hub_cache_dir, plan_memory, recipe_aliases,
                     recipe_names, resolve_hf_id, serialize,
                     supported_aten_ops)
from ._export import (ExportError, export, export_llm, export_meta,
                      load_config, write_safetensors)
from ._runtime import Generation, Program, Runner

try:  # a runtime built with libpng and libjpeg (runtime/image)
    from ._etllm import preprocess_image, preprocess_image_tiles
except ImportError:  # pragma: no cover
    preprocess_image = preprocess_image_tiles = None

__all__ = [
    "Error", "ExportConfig", "ExportError", "Generation", "Program", "Runner",
    "Tester", "export", "export_config_schema", "export_llm", "export_meta",
    "hf_hub_cache_dir", "load_config", "plan_memory", "preprocess_image",
    "preprocess_image_tiles",
    "recipe_aliases",
    "recipe_names", "resolve_hf_id", "serialize", "supported_aten_ops",
    "write_safetensors",
]
