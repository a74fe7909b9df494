"""python3 -m etllm.export_llm: export a model to a program file.

    python3 -m etllm.export_llm --check_point consolidated.00.pth \
        --model_config params.json --export_config export_config.yaml \
        -o model.pte
    python3 -m etllm.export_llm --hf_id org/name -o model.pte
    python3 -m etllm.export_llm --model path/to/model -o model.pte

`etllm.export_llm(module, example_inputs, config)` (the function) exports a
torch.nn.Module; importing this module explicitly keeps that callable.
"""

import sys
import types

from ._export import export_llm, main


class _CallableModule(types.ModuleType):
    """`import etllm.export_llm` rebinds the package attribute to this
    module; calling it still calls the function."""

    def __call__(self, *args, **kwargs):
        return export_llm(*args, **kwargs)


if __name__ == "__main__":
    sys.exit(main())
else:
    sys.modules[__name__].__class__ = _CallableModule
