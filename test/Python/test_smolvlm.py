"""SmolVLM (issue 34): a tiny random SmolVLMForConditionalGeneration made by
etllm-gen-checkpoint (--arch smolvlm: a SigLIP-like tower of 3 layers over
32 x 32 images in 8 x 8 patches, its last hidden state after post_layernorm
pixel-shuffled 2 x 2 into 16 features of 128 channels, the connector's
projection, a llama decoder; the processor's image splitting into 32 x 32
tiles of a 64-pixel image plus its global image), exported through
etllm-export, checked against transformers' own model in float64 on the
same files:

- `vision_encoder` gives SmolVLMModel.get_image_features and
  `text_decoder` the logits of the whole model for an image + prompt,
  within 1e-4 relative (portable and cpu-fp32);
- the runtime's tiles, grid and global image equal SmolVLMImageProcessorPil's
  (its longest-edge resize, the resize to whole tiles, the crops, the
  global resize, all Lanczos) on five images of different sizes and
  formats;
- the Runner prints the greedy tokens of transformers' generate with the
  processor's expansion of an image: each tile after
  <fake_token_around_image><row_R_col_C>, a newline after each row, then
  "\n<fake_token_around_image><global-img>", the global image,
  <fake_token_around_image>; and without splitting, the global image
  alone;
- llama.cpp's form of the same weights (a llama GGUF and an mmproj of
  projector type idefics3 written by scripts/lib/smolvlm_mmproj.py) gives
  the same greedy text."""

import json
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
IMAGE_TOKEN = VOCAB - 1
IMAGE_SEQ = 16
BEFORE = "<fake_token_around_image><global-img>"
AFTER = "<fake_token_around_image>"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, tool):
    d = tmp_path_factory.mktemp("smolvlm") / "hf"
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "smolvlm",
                    "--format", "hf", "--vocab", str(VOCAB),
                    "--vision-preset", "smolvlm-tiny",
                    # tok512 spells each <row_R_col_C> out in ~30 tokens
                    "--max-seq", "1024", "-o", str(d)],
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
    return composite.image_processor(transformers, checkpoint,
                                     "SmolVLMImageProcessorPil")


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return images_lib.five_images(tmp_path_factory.mktemp("images"), 7)


def _ref_frames(processor, path):
    """The processor's frames (tiles row by row, then the global image) and
    its grid."""
    out = processor(Image.open(path), return_tensors="np",
                    return_row_col_info=True)
    return out["pixel_values"][0], out["rows"][0][0], out["cols"][0][0]


def test_pixels_match_the_models_processor(programs, processor, images):
    if etllm.preprocess_image is None:
        pytest.skip("the runtime was built without libpng/libjpeg")
    runner = etllm.Runner(programs["portable"])
    grids = set()
    for path in images:
        rows, cols, tiles, whole = etllm.preprocess_image_tiles(
            str(path), runner.image_preprocessor)
        frames, ref_rows, ref_cols = _ref_frames(processor, path)
        assert (rows, cols) == (ref_rows, ref_cols), path.name
        ours = np.concatenate([tiles, whole[None]])
        assert ours.shape == frames.shape
        assert np.abs(ours - frames).max() <= 1e-5, path.name
        grids.add((rows, cols))
    assert len(grids) >= 2  # images of different shapes, different grids


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


def _greedy(reference, processor, ids, paths):
    pixels = np.concatenate([_ref_frames(processor, p)[0] for p in paths])
    pixels = pixels[None]
    with torch.no_grad():
        out = reference.generate(
            input_ids=torch.tensor([ids]),
            pixel_values=torch.tensor(pixels, dtype=torch.float64),
            max_new_tokens=12, do_sample=False, eos_token_id=None,
            pad_token_id=0)
    return out[0, len(ids):].tolist()


def _prompt_ids(runner, rows, cols, before, after):
    """SmolVLMProcessor's expansion of `before`<image>`after`, tokenized as
    the runner does: the text between image tokens apart."""
    ids, pending, first = [], before, True

    def flush():
        nonlocal pending, first
        if pending:
            ids.extend(runner.encode(pending, first))
        elif first:
            ids.extend(runner.encode("", True))
        pending, first = "", False

    for r in range(rows):
        for c in range(cols):
            pending += f"<fake_token_around_image><row_{r + 1}_col_{c + 1}>"
            flush()
            ids.extend([IMAGE_TOKEN] * IMAGE_SEQ)
        pending += "\n"
    if rows:
        pending += "\n"
    pending += BEFORE
    flush()
    ids.extend([IMAGE_TOKEN] * IMAGE_SEQ)
    pending = AFTER + after
    flush()
    return ids


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_runner_prints_the_references_greedy_text(programs, reference,
                                                  processor, images, recipe):
    runner = etllm.Runner(programs[recipe])
    texts = set()
    for path in images[:3]:
        _, rows, cols = _ref_frames(processor, path)
        ids = _prompt_ids(runner, rows, cols, "Once upon a", " time")
        out = []
        runner.generate("Once upon a<image> time", images=[path],
                        max_new_tokens=12, temperature=0, callback=out.append)
        ref = _greedy(reference, processor, ids, [path])
        text = "".join(out)
        assert text == composite.text_after(runner, ids, ref)
        assert runner.stats["prompt_tokens"] == len(ids)
        assert runner.stats["images"] == rows * cols + 1
        texts.add(text)
    assert len(texts) == 3


def test_without_splitting_the_global_image_alone(checkpoint, reference,
                                                  tool, tok512, images,
                                                  tmp_path):
    d = tmp_path / "nosplit"
    subprocess.run(["cp", "-r", str(checkpoint), str(d)], check=True)
    cfg = json.loads((d / "preprocessor_config.json").read_text())
    cfg["do_image_splitting"] = False
    (d / "preprocessor_config.json").write_text(json.dumps(cfg))
    pte = tmp_path / "nosplit.pte"
    subprocess.run([tool("etllm-export"), "--model", str(d), "--tokenizer",
                    str(tok512), "--quiet", "-o", str(pte)], check=True)
    cfg.pop("image_processor_type", None)
    processor = transformers.SmolVLMImageProcessorPil(**cfg)
    runner = etllm.Runner(pte)
    ids = _prompt_ids(runner, 0, 0, "Once upon a", " time")
    out = []
    runner.generate("Once upon a<image> time", images=[images[0]],
                    max_new_tokens=12, temperature=0, callback=out.append)
    ref = _greedy(reference, processor, ids, [images[0]])
    assert "".join(out) == composite.text_after(runner, ids, ref)
    assert runner.stats["images"] == 1


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
          / "smolvlm_mmproj.py")


@pytest.fixture(scope="module")
def gguf_pair(checkpoint, tool):
    """The same weights as llama.cpp keeps them: the llama decoder as GGUF
    (etllm-gen-checkpoint --format gguf of the composite) and the tower +
    connector as an mmproj of projector type idefics3."""
    d = checkpoint.parent
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "smolvlm",
                    "--format", "gguf", "--vocab", str(VOCAB),
                    "--vision-preset", "smolvlm-tiny", "--max-seq", "1024",
                    "-o", str(d / "text.gguf")], check=True,
                   capture_output=True)
    subprocess.run([sys.executable, str(MMPROJ), str(checkpoint),
                    str(d / "mmproj.gguf")], check=True)
    return d / "text.gguf", d / "mmproj.gguf"


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_gguf_and_mmproj_give_the_hf_greedy_tokens(gguf_pair, programs,
                                                   images, tool, tok512,
                                                   recipe):
    text, mmproj = gguf_pair
    pte = text.parent / f"gguf-{recipe}.pte"
    subprocess.run([tool("etllm-export"), "--model", str(text), "--set",
                    f"model.mmproj={mmproj}", "--pipeline", recipe,
                    "--tokenizer", str(tok512), "--quiet", "-o", str(pte)],
                   check=True)
    for shown in ([images[0]], [images[2]], images[:2]):
        assert (composite.run_with_images(tool, pte, shown, 12)
                == composite.run_with_images(tool, programs[recipe], shown,
                                             12))
