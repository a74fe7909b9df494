"""A vision encoder of your own composed with a decoder (issue 34, the
seed's `_export_llm(nn.Module, config)`): etllm.export_llm(encoder,
(pixels,), config, decoder=<checkpoint>, image_preprocessor=...) traces a
torch.nn.Module encoder and composes it with a decoder checkpoint (here
etllm-gen-checkpoint's tiny llama) into one program with `forward`,
`vision_encoder` and `text_decoder`:

- `vision_encoder` gives the module's own features (float32, 1e-5), on the
  portable and the CPU recipes;
- the Runner's greedy text with an image equals transformers' generate on
  the decoder's embeddings with the features in the image's place (float64);
- an image file goes through the recorded image processor;
- a wrong encoder, a missing or mismatched processor: one clear error."""

import subprocess

import numpy as np
import pytest
from PIL import Image

import etllm

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = 512
HIDDEN = 64  # the tiny llama's
FEATURES = 16
PRE = {"do_resize": True, "size": {"height": 32, "width": 32},
       "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255,
       "do_normalize": True, "image_mean": [0.5, 0.5, 0.5],
       "image_std": [0.5, 0.5, 0.5]}


class PatchEncoder(torch.nn.Module):
    """A user's encoder: 8 x 8 patches, a GELU MLP, a LayerNorm."""

    def __init__(self, out=HIDDEN):
        super().__init__()
        self.patch = torch.nn.Conv2d(3, 32, 8, stride=8)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(32, 64),
                                       torch.nn.GELU(),
                                       torch.nn.Linear(64, out))
        self.norm = torch.nn.LayerNorm(out)

    def forward(self, pixels):
        x = self.patch(pixels).flatten(2).transpose(1, 2)
        return self.norm(self.mlp(x)) * 3.0


@pytest.fixture(scope="module")
def decoder(tmp_path_factory, tool):
    d = tmp_path_factory.mktemp("compose") / "decoder"
    subprocess.run([tool("etllm-gen-checkpoint"), "--arch", "llama",
                    "--format", "hf", "--vocab", str(VOCAB), "-o", str(d)],
                   check=True, capture_output=True)
    return d


@pytest.fixture(scope="module")
def encoder():
    torch.manual_seed(0)
    return PatchEncoder().eval()


@pytest.fixture(scope="module")
def programs(decoder, encoder, tok512):
    out = {}
    for recipe in ("portable", "cpu-fp32", "cpu-8da4w"):
        p = decoder.parent / f"{recipe}.pte"
        etllm.export_llm(encoder, (torch.zeros(1, 3, 32, 32),),
                         {"pipeline": {"name": recipe}}, decoder=decoder,
                         image_preprocessor=PRE, tokenizer=tok512, output=p)
        out[recipe] = p
    return out


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_vision_encoder_is_the_modules(programs, encoder, recipe):
    rng = np.random.default_rng(0)
    pixels = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    program = etllm.Program(programs[recipe])
    ours = np.array(program.run_method("vision_encoder", pixels)[0])
    with torch.no_grad():
        ref = encoder(torch.tensor(pixels)).numpy()
    assert ours.shape == ref.shape == (1, FEATURES, HIDDEN)
    assert np.abs(ours - ref).max() <= 1e-5 * max(1.0, np.abs(ref).max())
    meta = etllm.Runner(programs[recipe])
    assert meta.image_preprocessor is not None


def _reference_greedy(decoder, encoder, ids, at, pixels):
    model = transformers.AutoModelForCausalLM.from_pretrained(
        decoder, dtype=torch.float64).eval()
    with torch.no_grad():
        feats = encoder.double()(torch.tensor(pixels[None],
                                              dtype=torch.float64))[0]
        encoder.float()
        emb = model.get_input_embeddings()(torch.tensor([ids]))
        emb[0, at:at + FEATURES] = feats
        out = model.generate(inputs_embeds=emb,
                             attention_mask=torch.ones(1, len(ids),
                                                       dtype=torch.long),
                             max_new_tokens=12, do_sample=False,
                             eos_token_id=None, pad_token_id=0)
    return out[0].tolist()


@pytest.mark.parametrize("recipe", ["portable", "cpu-fp32"])
def test_runner_prints_the_references_greedy_text(programs, decoder, encoder,
                                                  recipe):
    runner = etllm.Runner(programs[recipe])
    rng = np.random.default_rng(1)
    texts = set()
    for _ in range(2):
        pixels = rng.standard_normal((3, 32, 32)).astype(np.float32)
        before = runner.encode("Once upon a", True)
        ids = before + [0] * FEATURES + runner.encode(" time", False)
        out = []
        runner.generate("Once upon a<image> time", images=[pixels],
                        max_new_tokens=12, temperature=0, callback=out.append)
        ref = _reference_greedy(decoder, encoder, ids, len(before), pixels)
        text = "".join(out)
        expect = (runner.decode(ids[-1:] + ref)[len(runner.decode(ids[-1:])):]
                  .decode("utf-8", "replace"))
        assert text == expect
        texts.add(text)
    assert len(texts) == 2  # the image reaches the decoder


def test_an_image_file_goes_through_the_recorded_processor(programs,
                                                           tmp_path):
    if etllm.preprocess_image is None:
        pytest.skip("the runtime was built without libpng/libjpeg")
    rng = np.random.default_rng(2)
    path = tmp_path / "photo.png"
    Image.fromarray(rng.integers(0, 256, (40, 56, 3), dtype=np.uint8)).save(
        path)
    runner = etllm.Runner(programs["cpu-8da4w"])
    pixels = etllm.preprocess_image(str(path), runner.image_preprocessor)
    a, b = [], []
    runner.generate("A<image>", images=[path], max_new_tokens=6,
                    temperature=0, callback=a.append)
    runner.generate("A<image>", images=[pixels], max_new_tokens=6,
                    temperature=0, callback=b.append)
    assert a == b and a


def test_bad_compositions_get_one_clear_error(decoder, tok512, tmp_path):
    px = (torch.zeros(1, 3, 32, 32),)
    torch.manual_seed(0)
    with pytest.raises(etllm.ExportError,
                       match="features have 48 channels; the decoder's "
                             "hidden size is 64"):
        etllm.export_llm(PatchEncoder(48).eval(), px, decoder=decoder,
                         image_preprocessor=PRE, output=tmp_path / "a.pte")
    with pytest.raises(etllm.ExportError, match="needs image_preprocessor"):
        etllm.export_llm(PatchEncoder().eval(), px, decoder=decoder,
                         output=tmp_path / "b.pte")
    other = dict(PRE, size={"height": 48, "width": 48})
    with pytest.raises(etllm.ExportError,
                       match="gives 48 x 48 pixels; the vision encoder "
                             "takes 32 x 32"):
        etllm.export_llm(PatchEncoder().eval(), px, decoder=decoder,
                         image_preprocessor=other, output=tmp_path / "c.pte")
    with pytest.raises(etllm.ExportError, match="go with decoder"):
        etllm.export_llm(PatchEncoder().eval(), px, image_preprocessor=PRE,
                         output=tmp_path / "d.pte")


def test_the_encoder_keeps_float_with_the_exclusion(decoder, encoder):
    """cpu-8da4w quantizes the encoder's linears as the decoder's;
    quantization.exclude: ["vision_tower.*"] keeps them float (its
    parameters are named so)."""
    rng = np.random.default_rng(3)
    pixels = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    with torch.no_grad():
        ref = encoder(torch.tensor(pixels)).numpy()
    errors = []
    for cfg in ({"pipeline": {"name": "cpu-8da4w"}},
                {"pipeline": {"name": "cpu-8da4w"},
                 "quantization": {"exclude": ["vision_tower.*"]}}):
        program = etllm.export_llm(encoder, (torch.zeros(1, 3, 32, 32),),
                                   cfg, decoder=decoder,
                                   image_preprocessor=PRE)
        ours = np.array(program.run_method("vision_encoder", pixels)[0])
        errors.append(np.abs(ours - ref).max() / np.abs(ref).max())
    assert errors[0] > 1e-3   # int4 weights
    assert errors[1] <= 1e-5  # float
