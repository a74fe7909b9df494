"""Gemma 3 with images (issue 34): a tiny random
Gemma3ForConditionalGeneration made by etllm-gen-checkpoint (--arch
gemma3-vision: a SigLIP tower of 3 layers over 32 x 32 images in 8 x 8
patches, its last hidden state after post_layernorm average-pooled 2 x 2 to
16 features, mm_soft_emb_norm and mm_input_projection_weight; a 6-layer
Gemma 3 decoder, five sliding-window layers of window 8 -- shorter than an
image -- and one global), exported through etllm-export, checked against
transformers' own model in float64 on the same files:

- `vision_encoder` gives Gemma3Model.get_image_features; the logits after
  text through `forward`, the image through `text_decoder` (its positions
  attending to each other both ways, as transformers' token_type_ids mask
  does) and text again match the whole model's within 1e-4 relative, and
  differ from a causal-only image (so the test can fail);
- the runtime's pixels equal Gemma3ImageProcessorPil's on five images;
- the Runner prints transformers' greedy tokens with the processor's image
  wrapping ("\\n\\n", boi, the image, eoi, "\\n\\n");
- the quantized recipes export and generate;
- llama.cpp's form of the same weights (a gemma3 text GGUF whose vocabulary
  names the image tokens, and an mmproj of projector type gemma3 written
  by scripts/lib/gemma3_mmproj.py) gives the same greedy text."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import composite
import etllm
import images as images_lib

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.numpy import load_file  # noqa: E402

VOCAB = 512
IMAGE_TOKEN = VOCAB - 1  # the generator's image_token_index
BOI, EOI = VOCAB - 3, VOCAB - 2
IMAGE_SEQ = 16           # (32 / 4 / 2)^2
HIDDEN = 64


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, tool):
    d = tmp_path_factory.mktemp("gemma3-vision") / "hf"
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "gemma3-vision",
                    "--format", "hf", "--vocab", str(VOCAB), "--layers", "6",
                    "--vision-preset", "gemma3-tiny", "-o", str(d)],
                   check=True, capture_output=True)
    return d


def _export(tool, checkpoint, tok512, recipe):
    p = checkpoint.parent / f"{recipe}.pte"
    if not p.exists():
        subprocess.run([tool("etllm-export"), "--model", str(checkpoint),
                        "--pipeline", recipe, "--tokenizer", str(tok512),
                        "--quiet", "-o", str(p)], check=True)
    return p


@pytest.fixture(scope="module")
def programs(checkpoint, tool, tok512):
    return {r: _export(tool, checkpoint, tok512, r)
            for r in ("portable", "cpu-fp32")}


@pytest.fixture(scope="module")
def reference(checkpoint):
    model, info = transformers.Gemma3ForConditionalGeneration.from_pretrained(
        checkpoint, dtype=torch.float64, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert model.config.text_config.layer_types[-1] == "full_attention"
    assert model.config.text_config.sliding_window < IMAGE_SEQ
    return model.eval()


@pytest.fixture(scope="module")
def processor(checkpoint):
    return composite.image_processor(transformers, checkpoint,
                                     "Gemma3ImageProcessorPil")


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return images_lib.five_images(tmp_path_factory.mktemp("images"), 5)


def _ref_pixels(processor, path):
    return processor(Image.open(path), return_tensors="np")["pixel_values"][0]


def test_pixels_match_the_models_processor(programs, processor, images):
    if etllm.preprocess_image is None:
        pytest.skip("the runtime was built without libpng/libjpeg")
    runner = etllm.Runner(programs["portable"])
    for path in images:
        ours = etllm.preprocess_image(str(path), runner.image_preprocessor)
        ref = _ref_pixels(processor, path)
        assert ours.shape == ref.shape == (3, 32, 32)
        assert np.abs(ours - ref).max() <= 1e-5, path.name


def _rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_methods_match_float64(programs, reference, checkpoint, recipe):
    rng = np.random.default_rng(0)
    pixels = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    before, after = [2, 5, 7, BOI], [EOI, 9, 10]
    ids = before + [IMAGE_TOKEN] * IMAGE_SEQ + after
    types = torch.tensor([[int(i == IMAGE_TOKEN) for i in ids]])
    px64 = torch.tensor(pixels, dtype=torch.float64)
    with torch.no_grad():
        ref = reference(input_ids=torch.tensor([ids]), pixel_values=px64,
                        token_type_ids=types).logits[0].numpy()
        causal = reference(input_ids=torch.tensor([ids]),
                           pixel_values=px64).logits[0].numpy()
        ref_features = reference.model.get_image_features(
            pixel_values=px64).pooler_output[0].numpy()

    program = etllm.Program(programs[recipe], method="forward")
    features = np.array(program.run_method("vision_encoder", pixels)[0])[0]
    assert features.shape == ref_features.shape == (IMAGE_SEQ, HIDDEN)
    assert _rel(features, ref_features) <= 1e-4

    # token_embedding: Gemma's embeddings scaled by sqrt(hidden) in the
    # embedding's dtype, as forward's.
    table = load_file(checkpoint / "model.safetensors")[
        "language_model.model.embed_tokens.weight"]
    embedded = np.array(program.run_method("token_embedding",
                                           np.array([before]))[0])[0]
    assert np.array_equal(embedded,
                          table[before] * np.float32(np.sqrt(HIDDEN)))
    # The runner's three calls over one cache, by hand: text, the image's
    # features (not scaled as token embeddings are), text.
    program.forward(np.array([before]), 0)
    image_logits = np.array(program.run_method(
        "text_decoder", features[None], np.arange(len(before),
                                                  len(before) + IMAGE_SEQ))[0])
    last = np.array(program.forward(np.array([after]),
                                    len(before) + IMAGE_SEQ))[0, -1]
    assert _rel(image_logits[0, -1], ref[len(before) + IMAGE_SEQ - 1]) <= 1e-4
    assert _rel(last, ref[-1]) <= 1e-4
    # The image's positions see each other: a causal image differs.
    assert _rel(last, causal[-1]) > 1e-2


def _greedy(reference, processor, ids, paths):
    pixels = np.stack([_ref_pixels(processor, p) for p in paths])
    with torch.no_grad():
        out = reference.generate(
            input_ids=torch.tensor([ids]),
            token_type_ids=torch.tensor([[int(i == IMAGE_TOKEN)
                                          for i in ids]]),
            pixel_values=torch.tensor(pixels, dtype=torch.float64),
            max_new_tokens=12, do_sample=False, eos_token_id=None,
            pad_token_id=0)
    return out[0, len(ids):].tolist()


def _image(runner):
    return [BOI] + [IMAGE_TOKEN] * IMAGE_SEQ + [EOI]


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_runner_prints_the_references_greedy_text(programs, reference,
                                                  processor, images, recipe):
    runner = etllm.Runner(programs[recipe])
    texts = set()
    for path in images[:2]:
        # Gemma3Processor's wrapping: "\n\n", boi, the image, eoi, "\n\n",
        # the text around it tokenized apart.
        ids = (runner.encode("Once upon a\n\n", True) + _image(runner)
               + runner.encode("\n\n time", False))
        out = []
        runner.generate("Once upon a<image> time", images=[path],
                        max_new_tokens=12, temperature=0, callback=out.append)
        ref = _greedy(reference, processor, ids, [path])
        text = "".join(out)
        assert text == composite.text_after(runner, ids, ref)
        assert runner.stats["prompt_tokens"] == len(ids)
        texts.add(text)
    assert len(texts) == 2

    # Two images.
    ids = (runner.encode("A\n\n", True) + _image(runner)
           + runner.encode("\n\n and\n\n", False) + _image(runner)
           + runner.encode("\n\n cat", False))
    out = []
    runner.generate("A<image> and<image> cat", images=images[:2],
                    max_new_tokens=12, temperature=0, callback=out.append)
    ref = _greedy(reference, processor, ids, images[:2])
    assert "".join(out) == composite.text_after(runner, ids, ref)
    assert runner.stats["images"] == 2


@pytest.mark.parametrize("recipe", ["cpu-8da4w", "cpu-int8"])
def test_quantized_recipes_generate(checkpoint, tool, tok512, images,
                                    recipe):
    pte = _export(tool, checkpoint, tok512, recipe)
    r = subprocess.run([tool("etllm-run"), str(pte), "--image",
                        str(images[1]), "--prompt", "Once upon a<image> time",
                        "-n", "8", "--temperature", "0"],
                       check=True, capture_output=True)
    assert r.stdout


MMPROJ = (pathlib.Path(__file__).resolve().parents[2] / "scripts" / "lib"
          / "gemma3_mmproj.py")


@pytest.fixture(scope="module")
def gguf_pair(checkpoint, tool):
    """The same weights as llama.cpp keeps them: the decoder as a gemma3
    GGUF whose vocabulary names the image tokens (etllm-gen-checkpoint
    --format gguf of the composite) and the tower + projector as an mmproj
    of projector type gemma3 (f32, and f16 as llama.cpp's converter
    writes it)."""
    d = checkpoint.parent
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "gemma3-vision",
                    "--format", "gguf", "--vocab", str(VOCAB), "--layers",
                    "6", "--vision-preset", "gemma3-tiny", "-o",
                    str(d / "text.gguf")], check=True, capture_output=True)
    for name, extra in (("mmproj.gguf", []), ("mmproj-f16.gguf", ["--f16"])):
        subprocess.run([sys.executable, str(MMPROJ), str(checkpoint),
                        str(d / name)] + extra, check=True)
    return d / "text.gguf", d / "mmproj.gguf", d / "mmproj-f16.gguf"


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_gguf_and_mmproj_give_the_hf_greedy_tokens(gguf_pair, programs,
                                                   images, tool, tok512,
                                                   recipe):
    text, mmproj, _ = gguf_pair
    pte = text.parent / f"gguf-{recipe}.pte"
    subprocess.run([tool("etllm-export"), "--model", str(text), "--set",
                    f"model.mmproj={mmproj}", "--pipeline", recipe,
                    "--tokenizer", str(tok512), "--quiet", "-o", str(pte)],
                   check=True)
    for shown in ([images[0]], [images[1]], images[:2]):
        assert (composite.run_with_images(tool, pte, shown, 16)
                == composite.run_with_images(tool, programs[recipe], shown,
                                             16))


def test_f16_mmproj_generates(gguf_pair, tool, tok512, images):
    text, _, f16 = gguf_pair
    pte = text.parent / "gguf-f16.pte"
    subprocess.run([tool("etllm-export"), "--model", str(text), "--set",
                    f"model.mmproj={f16}", "--tokenizer", str(tok512),
                    "--quiet", "-o", str(pte)], check=True)
    assert composite.run_with_images(tool, pte, [images[0]], 16)


def test_mmproj_errors(gguf_pair, tool, tmp_path):
    _, mmproj, _ = gguf_pair
    # A text model whose vocabulary has no <start_of_image>.
    plain = tmp_path / "plain.gguf"
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "gemma3",
                    "--format", "gguf", "--vocab", str(VOCAB), "-o",
                    str(plain)], check=True, capture_output=True)
    r = subprocess.run([tool("etllm-export"), "--model", str(plain), "--set",
                        f"model.mmproj={mmproj}", "--quiet", "-o",
                        str(tmp_path / "x.pte")], capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "has no '<start_of_image>' token" in r.stderr
    assert r.stderr.count("\n") == 1
