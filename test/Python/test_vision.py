"""A non-LLM transformer: a ViT/CLIP-style vision encoder (patch-embedding
convolution, LayerNorm, multi-head attention without a cache, GELU MLP)
exported with export_llm takes float pixels and returns float features that
match torch eager."""

import numpy as np
import pytest
import torch

import etllm
import models


def test_encoder_matches_eager():
    m = models.vision_encoder()
    x = torch.randn(2, 3, 32, 32)
    prog = etllm.export_llm(m, (x,))
    # The program's signature is the traced one: static float inputs.
    assert prog.inputs == [("f32", [2, 3, 32, 32])]
    assert prog.outputs == [("f32", [2, 17, 48])]
    for _ in range(2):  # no state between calls
        x = torch.randn(2, 3, 32, 32)
        with torch.no_grad():
            ref = m(x).numpy()
        out = prog.run(x.numpy())
        assert len(out) == 1
        assert out[0].shape == ref.shape
        assert np.abs(out[0] - ref).max() <= 1e-4


def test_encoder_ir_keeps_layers_and_maps_the_patch_convolution(tmp_path):
    m = models.vision_encoder()
    etllm.export_llm(m, (torch.randn(1, 3, 32, 32),), output=tmp_path / "v.mlir",
                     stop_after="import")
    ir = (tmp_path / "v.mlir").read_text()
    assert "func.func @forward(%arg0: tensor<1x3x32x32xf32>) -> " \
        "tensor<1x17x48xf32>" in ir
    assert ir.count("etllm.layer_norm") == 2 * 2 + 2
    assert ir.count("etllm.gelu") == 2
    assert ir.count("etllm.softmax") == 2
    # Patchify: [1, 3, 4, 8, 4, 8] -> linear with the [48, 192] weight view.
    assert "tensor<1x3x32x32xf32> -> tensor<1x3x4x8x4x8xf32>" in ir
    assert 'etllm.module = "patch_embedding"' in ir
    assert 'layers.1.self_attn = "VisionAttention"' in ir
    assert "etllm.buffer " not in ir


def test_encoder_through_the_cpu_recipe():
    m = models.vision_encoder(seed=1)
    x = torch.randn(1, 3, 32, 32)
    prog = etllm.export_llm(m, (x,), {"pipeline": {"name": "cpu-fp32"}})
    with torch.no_grad():
        ref = m(x).numpy()
    assert np.abs(prog.run(x.numpy())[0] - ref).max() <= 1e-4


def test_inputs_are_checked():
    m = models.vision_encoder()
    prog = etllm.export_llm(m, (torch.randn(1, 3, 32, 32),))
    with pytest.raises(etllm.Error, match="takes 1 inputs, got 2"):
        prog.run(np.zeros((1, 3, 32, 32), np.float32), np.zeros(1))
    with pytest.raises(etllm.Error, match="rank 3"):
        prog.run(np.zeros((3, 32, 32), np.float32))
    with pytest.raises(etllm.Error):
        prog.run(np.zeros((1, 3, 64, 64), np.float32))  # exceeds the plan
    with pytest.raises(etllm.Error, match="is not forward"):
        prog.forward([1, 2, 3])


class PaddedConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def test_general_convolutions_are_reported():
    with pytest.raises(etllm.ExportError) as e:
        etllm.export_llm(PaddedConv(), (torch.randn(1, 3, 8, 8),))
    assert "aten.conv2d.default (node 'conv2d' at conv): only " \
        "patch-embedding convolutions" in str(e.value)
