"""SmolVLM (issue 34): a tiny random SmolVLMForConditionalGeneration made by
etllm-gen-checkpoint (--arch smolvlm: a SigLIP-like tower of 3 layers over
32 x 32 images in 8 x 8 patches, its last hidden state after post_layernorm
pixel-shuffled 2 x 2 into 16 features of 128 channels, the connector's
projection, a llama decoder), exported through etllm-export, checked
against transformers' own model in float64 on the same files:

- `vision_encoder` gives SmolVLMModel.get_image_features and
  `text_decoder` the logits of the whole model for an image + prompt,
  within 1e-4 relative (portable and cpu-fp32);
- the runtime's pixels equal SmolVLMImageProcessorPil's (its longest-edge
  resize, then the tower's square, both Lanczos) on five images;
- the Runner prints the greedy tokens of transformers' generate with the
  processor's wrapping of an image (<fake_token_around_image><global-img>,
  the features, <fake_token_around_image>);
- image splitting (the processor's default for the hub's SmolVLM) is
  refused with one error."""

import json
import subprocess

import numpy as np
import pytest
from PIL import Image

import etllm
import images as images_lib

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.numpy import load_file  # noqa: E402

VOCAB = 512
IMAGE_TOKEN = VOCAB - 1
IMAGE_SEQ = 16
BEFORE = "<fake_token_around_image><global-img>"
AFTER = "<fake_token_around_image>"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, tool):
    d = tmp_path_factory.mktemp("smolvlm") / "hf"
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "smolvlm",
                    "--format", "hf", "--vocab", str(VOCAB),
                    "--vision-preset", "smolvlm-tiny", "-o", str(d)],
                   check=True, capture_output=True)
    return d


def _export(tool, checkpoint, tok512, recipe, model=None):
    p = checkpoint.parent / f"{recipe}.pte"
    if not p.exists():
        subprocess.run([tool("etllm-export"), "--model",
                        str(model or checkpoint), "--pipeline", recipe,
                        "--tokenizer", str(tok512), "--quiet", "-o", str(p)],
                       check=True)
    return p


@pytest.fixture(scope="module")
def programs(checkpoint, tool, tok512):
    return {r: _export(tool, checkpoint, tok512, r)
            for r in ("portable", "cpu-fp32")}


@pytest.fixture(scope="module")
def reference(checkpoint):
    model, info = transformers.SmolVLMForConditionalGeneration.from_pretrained(
        checkpoint, dtype=torch.float64, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    return model.eval()


@pytest.fixture(scope="module")
def processor(checkpoint):
    cfg = json.loads((checkpoint / "preprocessor_config.json").read_text())
    cfg.pop("image_processor_type", None)
    return transformers.SmolVLMImageProcessorPil(**cfg)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(7)
    out = []
    p = d / "noise.png"
    Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(p)
    out.append(p)
    p = d / "photo.jpg"
    Image.fromarray(images_lib.photo(40, 30, 1, noise=40)).save(p, quality=90)
    out.append(p)
    p = d / "rgba.png"
    rgba = np.concatenate([images_lib.photo(33, 95, 2, noise=40),
                           rng.integers(0, 256, (95, 33, 1), dtype=np.uint8)],
                          axis=-1)
    Image.fromarray(rgba, "RGBA").save(p)
    out.append(p)
    p = d / "gray.png"
    Image.fromarray(images_lib.photo(120, 77, 3, noise=40)[..., 0],
                    "L").save(p)
    out.append(p)
    p = d / "progressive.jpg"
    Image.fromarray(images_lib.photo(257, 131, 4, noise=40)).save(
        p, quality=85, progressive=True)
    out.append(p)
    return out


def _ref_pixels(processor, path):
    out = processor(Image.open(path), return_tensors="np")["pixel_values"]
    assert out.shape[:2] == (1, 1)  # no splitting: the one global image
    return out[0, 0]


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
    ids = [1, 5, 7] + [IMAGE_TOKEN] * IMAGE_SEQ + [9, 10]
    px64 = torch.tensor(pixels[None], dtype=torch.float64)
    with torch.no_grad():
        ref_logits = reference(input_ids=torch.tensor([ids]),
                               pixel_values=px64).logits[0, -1].numpy()
        feats = reference.model.get_image_features(pixel_values=px64)
        feats = getattr(feats, "pooler_output", feats)
        ref_features = torch.cat(list(feats)).reshape(IMAGE_SEQ, -1).numpy()
    program = etllm.Program(programs[recipe])
    features = np.array(program.run_method("vision_encoder", pixels)[0])[0]
    assert features.shape == ref_features.shape == (IMAGE_SEQ, 64)
    assert _rel(features, ref_features) <= 1e-4
    # The decoder is causal: one text_decoder call over the embeddings with
    # the features at the image's positions gives the whole model's logits.
    table = load_file(checkpoint / "model.safetensors")[
        "model.text_model.embed_tokens.weight"]
    embeddings = table[ids].copy()
    embeddings[3:3 + IMAGE_SEQ] = features
    logits = np.array(program.run_method(
        "text_decoder", embeddings[None].astype(np.float32),
        np.arange(len(ids)))[0])[0, -1]
    assert _rel(logits, ref_logits) <= 1e-4


def _text(runner, ids, generated):
    return (runner.decode(ids[-1:] + generated)[len(runner.decode(ids[-1:])):]
            .decode("utf-8", "replace"))


def _greedy(reference, processor, ids, paths):
    pixels = np.stack([_ref_pixels(processor, p) for p in paths])[None]
    with torch.no_grad():
        out = reference.generate(
            input_ids=torch.tensor([ids]),
            pixel_values=torch.tensor(pixels, dtype=torch.float64),
            max_new_tokens=12, do_sample=False, eos_token_id=None,
            pad_token_id=0)
    return out[0, len(ids):].tolist()


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_runner_prints_the_references_greedy_text(programs, reference,
                                                  processor, images, recipe):
    runner = etllm.Runner(programs[recipe])
    texts = set()
    for path in images[:2]:
        # SmolVLMProcessor's expansion of <image> without splitting; the
        # text around the image tokenized apart (its tokenizer splits at
        # the image tokens).
        ids = (runner.encode("Once upon a" + BEFORE, True)
               + [IMAGE_TOKEN] * IMAGE_SEQ
               + runner.encode(AFTER + " time", False))
        out = []
        runner.generate("Once upon a<image> time", images=[path],
                        max_new_tokens=12, temperature=0, callback=out.append)
        ref = _greedy(reference, processor, ids, [path])
        text = "".join(out)
        assert text == _text(runner, ids, ref)
        assert runner.stats["prompt_tokens"] == len(ids)
        texts.add(text)
    assert len(texts) == 2


@pytest.mark.parametrize("recipe", ["cpu-8da4w", "cpu-int8"])
def test_quantized_recipes_generate(checkpoint, tool, tok512, images,
                                    recipe):
    pte = _export(tool, checkpoint, tok512, recipe)
    r = subprocess.run([tool("etllm-run"), str(pte), "--image",
                        str(images[1]), "--prompt", "Once upon a<image> time",
                        "-n", "8", "--temperature", "0"],
                       check=True, capture_output=True)
    assert r.stdout


def test_image_splitting_is_refused(checkpoint, tool, tmp_path):
    d = tmp_path / "split"
    subprocess.run(["cp", "-r", str(checkpoint), str(d)], check=True)
    pre = json.loads((d / "preprocessor_config.json").read_text())
    pre["do_image_splitting"] = True
    (d / "preprocessor_config.json").write_text(json.dumps(pre))
    r = subprocess.run([tool("etllm-export"), "--model", str(d), "--quiet",
                        "-o", str(tmp_path / "x.pte")],
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "do_image_splitting true is not supported" in r.stderr
    assert r.stderr.count("\n") == 1
