"""A vision encoder composed with a decoder (LLaVA, issue 34): tiny random
LlavaForConditionalGeneration checkpoints made by etllm-gen-checkpoint (a
CLIP-ViT tower of 3 layers over 32 x 32 images, feature layer -2 without the
class token; or, as LLaVA-Interleave, a SigLIP tower, its last layer, every
feature; the GELU projector, a Llama decoder), exported through
etllm-export, checked against transformers' own model in float64 on the
same files:

- the program's `vision_encoder` gives LlavaModel.get_image_features and its
  `text_decoder` the logits of the whole model for an image + prompt, within
  1e-4 relative (portable and cpu-fp32);
- the runtime's pixels equal the model's own image processor's on five
  images of different sizes and formats;
- the Runner (Runner.generate(prompt, images=[...])) prints the greedy
  tokens of transformers' generate for each image, with the image at the
  prompt's <image> or, without one, first;
- bad inputs get one clear error."""

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
IMAGE_SEQ = 16           # (32 / 8)^2 patches, the class token dropped


# The towers: etllm-gen-checkpoint's --vision-preset, and the image
# processor class transformers pairs with it.
TOWERS = {"tiny": "CLIPImageProcessorPil",
          "siglip-tiny": "SiglipImageProcessorPil"}


@pytest.fixture(scope="module", params=sorted(TOWERS))
def tower(request):
    return request.param


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, tool, tower):
    d = tmp_path_factory.mktemp("llava-" + tower) / "hf"
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "llava",
                    "--format", "hf", "--vocab", str(VOCAB), "--vision-preset",
                    tower, "-o", str(d)],
                   check=True, capture_output=True)
    return d


@pytest.fixture(scope="module")
def programs(checkpoint, tool, tok512):
    out = {}
    for recipe in ("portable", "cpu-fp32"):
        p = checkpoint.parent / f"{recipe}.pte"
        subprocess.run([tool("etllm-export"), "--model", str(checkpoint),
                        "--pipeline", recipe, "--tokenizer", str(tok512),
                        "--quiet", "-o", str(p)], check=True)
        out[recipe] = p
    return out


@pytest.fixture(scope="module")
def reference(checkpoint):
    """transformers' model in float64, and the weights' own loading report:
    the generator's tensor names are those of the hub's LLaVA checkpoints."""
    model, info = transformers.LlavaForConditionalGeneration.from_pretrained(
        checkpoint, dtype=torch.float64, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    return model.eval()


@pytest.fixture(scope="module")
def processor(checkpoint, tower):
    return composite.image_processor(transformers, checkpoint, TOWERS[tower])


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return images_lib.five_images(tmp_path_factory.mktemp("images"), 3)


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


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_methods_match_float64(programs, reference, checkpoint, recipe):
    rng = np.random.default_rng(0)
    pixels = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    ids = [1, 5, 7] + [IMAGE_TOKEN] * IMAGE_SEQ + [9, 10]
    px64 = torch.tensor(pixels, dtype=torch.float64)
    with torch.no_grad():
        ref_logits = reference(input_ids=torch.tensor([ids]),
                               pixel_values=px64).logits[0, -1].numpy()
        ref_features = reference.model.get_image_features(
            pixel_values=px64).pooler_output
        ref_features = torch.cat(list(ref_features)).numpy()

    encoder = etllm.Program(programs[recipe], method="vision_encoder")
    features = np.array(encoder.run(pixels)[0])[0]
    assert features.shape == ref_features.shape == (IMAGE_SEQ, 64)
    rel = np.abs(features - ref_features).max() / np.abs(ref_features).max()
    assert rel <= 1e-4

    # text_decoder over the embeddings with the image's features at its
    # placeholders (the runner's job, done by hand here).
    # The program's token_embedding (ExecuTorch's multimodal flow: ids to
    # embeddings, the image's features in place, text_decoder).
    table = load_file(checkpoint / "model.safetensors")[
        "language_model.model.embed_tokens.weight"]
    embedder = etllm.Program(programs[recipe], method="token_embedding")
    embeddings = np.array(embedder.run(np.array([ids]))[0])[0].copy()
    assert np.array_equal(embeddings, table[ids])
    embeddings[3:3 + IMAGE_SEQ] = features
    decoder = etllm.Program(programs[recipe], method="text_decoder")
    logits = np.array(decoder.run(embeddings[None].astype(np.float32),
                                  np.arange(len(ids)))[0])[0, -1]
    rel = np.abs(logits - ref_logits).max() / np.abs(ref_logits).max()
    assert rel <= 1e-4


def _greedy(reference, processor, ids, paths):
    pixels = np.stack([_ref_pixels(processor, p) for p in paths])
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
        # The image at the placeholder: the text around it is tokenized
        # piece by piece.
        ids = (runner.encode("Once upon a", True) + [IMAGE_TOKEN] * IMAGE_SEQ
               + runner.encode(" time", False))
        out = []
        runner.generate("Once upon a<image> time", images=[path],
                        max_new_tokens=12, temperature=0, callback=out.append)
        ref = _greedy(reference, processor, ids, [path])
        text = "".join(out)
        assert text == composite.text_after(runner, ids, ref)
        assert runner.stats["images"] == 1
        assert runner.stats["image_encode_ms"] > 0
        assert runner.stats["prompt_tokens"] == len(ids)
        texts.add(text)
    # The two images give two texts: the image reaches the decoder.
    assert len(texts) == 2

    # No placeholder: the image first (after BOS); two images in order.
    ids = ([1] + [IMAGE_TOKEN] * IMAGE_SEQ + runner.encode("Once", False))
    out = []
    runner.generate("Once", images=[images[1]], max_new_tokens=12,
                    temperature=0, callback=out.append)
    ref = _greedy(reference, processor, ids, [images[1]])
    assert "".join(out) == composite.text_after(runner, ids, ref)
    ids = (runner.encode("A", True) + [IMAGE_TOKEN] * IMAGE_SEQ
           + runner.encode(" and", False) + [IMAGE_TOKEN] * IMAGE_SEQ
           + runner.encode(" cat", False))
    out = []
    runner.generate("A<image> and<image> cat", images=images[:2],
                    max_new_tokens=12, temperature=0, callback=out.append)
    ref = _greedy(reference, processor, ids, images[:2])
    assert "".join(out) == composite.text_after(runner, ids, ref)
    assert runner.stats["images"] == 2


def test_preprocessed_pixels_are_accepted(programs, processor, images):
    runner = etllm.Runner(programs["portable"])
    a, b = [], []
    runner.generate("Hi", images=[images[0]], max_new_tokens=6,
                    temperature=0, callback=a.append)
    pixels = _ref_pixels(processor, images[0]).astype(np.float32)
    runner.generate("Hi", images=[pixels], max_new_tokens=6,
                    temperature=0, callback=b.append)
    assert a == b


def test_bad_inputs_get_one_clear_error(programs, images, tmp_path, tok512,
                                        tool, shared):
    runner = etllm.Runner(programs["portable"])
    real_generate = runner.generate

    def generate(*args, **kwargs):  # run now (not a lazy Generation)
        return real_generate(*args, callback=lambda _: None, **kwargs)
    runner.generate = generate
    with pytest.raises(etllm.Error, match="1 <image> placeholders for 2"):
        runner.generate("A <image> cat", images=images[:2], max_new_tokens=2)
    bad = tmp_path / "bad.png"
    bad.write_bytes(images[0].read_bytes()[:100])
    with pytest.raises(etllm.Error, match="bad.png"):
        runner.generate("A", images=[bad], max_new_tokens=2)
    with pytest.raises(etllm.Error, match="vision encoder takes 32 x 32"):
        runner.generate("A", images=[np.zeros((3, 8, 8), np.float32)],
                        max_new_tokens=2)
    with pytest.raises(etllm.Error, match=r"float32 \[3, height, width\]"):
        runner.generate("A", images=[np.zeros((8, 8), np.float32)],
                        max_new_tokens=2)
    # A text-only program.
    text = tmp_path / "text.pte"
    subprocess.run([tool("etllm-export"), "--model",
                    str(shared / "models" / "stories260K" / "stories260K.bin"),
                    "--tokenizer", str(tok512), "--quiet", "-o", str(text)],
                   check=True)
    plain = etllm.Runner(text)
    assert plain.image_preprocessor is None
    with pytest.raises(etllm.Error, match="no vision encoder"):
        plain.generate("A", images=[images[0]], max_new_tokens=2,
                       callback=lambda _: None)


PROMPT = "Once upon a<image> time"
MMPROJ = (pathlib.Path(__file__).resolve().parents[2] / "scripts" / "lib"
          / "llava_mmproj.py")


@pytest.fixture(scope="module")
def gguf_pair(checkpoint, tool, tower):
    """The same weights as llama.cpp keeps them: the decoder as a llama GGUF
    (the generator's values depend on the tensor's name and the seed, so the
    tiny llama is the LLaVA's decoder) and the tower + projector as an mmproj
    (f32; and with the legacy converter's fc1/fc2 names)."""
    if tower != "tiny":
        pytest.skip("llama.cpp's mmproj of projector type mlp is a CLIP tower")
    d = checkpoint.parent
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "llama",
                    "--format", "gguf", "--vocab", str(VOCAB), "-o",
                    str(d / "text.gguf")], check=True, capture_output=True)
    for name, extra in (("mmproj.gguf", []),
                        ("mmproj-legacy.gguf", ["--legacy-ffn-names"])):
        subprocess.run([sys.executable, str(MMPROJ), str(checkpoint),
                        str(d / name)] + extra, check=True)
    return d / "text.gguf", d / "mmproj.gguf", d / "mmproj-legacy.gguf"


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_gguf_and_mmproj_give_the_hf_greedy_tokens(gguf_pair, programs,
                                                   images, tool, tok512,
                                                   recipe):
    text, mmproj, legacy = gguf_pair
    for proj in (mmproj, legacy):
        pte = text.parent / f"gguf-{proj.stem}-{recipe}.pte"
        subprocess.run([tool("etllm-export"), "--model", str(text), "--set",
                        f"model.mmproj={proj}", "--pipeline", recipe,
                        "--tokenizer", str(tok512), "--quiet", "-o",
                        str(pte)], check=True)
        for image in images[:2]:
            assert (composite.run_with_images(tool, pte, [image], 16, PROMPT)
                    == composite.run_with_images(tool, programs[recipe],
                                                 [image], 16, PROMPT))


def test_mmproj_errors(gguf_pair, checkpoint, tool, tmp_path):
    text, mmproj, _ = gguf_pair

    def export(model, proj):
        r = subprocess.run([tool("etllm-export"), "--model", str(model),
                            "--set", f"model.mmproj={proj}", "--quiet",
                            "-o", str(tmp_path / "x.pte")],
                           capture_output=True, text=True)
        assert r.returncode != 0
        return r.stderr

    assert "completes a GGUF text model" in export(checkpoint, mmproj)
    assert "not a llama.cpp mmproj file (expected 'clip')" in export(text, text)
    assert "missing.gguf" in export(text, tmp_path / "missing.gguf")
