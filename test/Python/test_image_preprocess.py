"""The runtime's image preprocessing (runtime/image, etllm.preprocess_image)
against transformers' own image processors (their PIL backend: the classes
CLIPImageProcessorPil, SiglipImageProcessorPil and Gemma3ImageProcessorPil,
made from the same preprocessor_config.json values: CLIP at 224, LLaVA-1.5's
CLIP at 336, SigLIP, Gemma 3's SigLIP at 896) on images of different sizes
and formats:
PNG (RGB, RGBA, gray, palette) and JPEG (baseline, progressive). The pixels
must agree within 1e-5 (they are computed with the same operations: equal
in practice). Pillow 13 is the reference (python/requirements.txt): its
resize chooses the order of its two passes, which Pillow 12 did not."""

import json

import numpy as np
import pytest
from PIL import Image

import etllm
import images as images_lib

transformers = pytest.importorskip("transformers")

CLIP = {
    "do_resize": True, "size": {"shortest_edge": 224}, "resample": 3,
    "do_center_crop": True, "crop_size": {"height": 224, "width": 224},
    "do_rescale": True, "rescale_factor": 0.00392156862745098,
    "do_normalize": True,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
}
SIGLIP = {
    "do_resize": True, "size": {"height": 224, "width": 224}, "resample": 3,
    "do_rescale": True, "rescale_factor": 0.00392156862745098,
    "do_normalize": True, "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
}
# LLaVA-1.5's (CLIP ViT-L/14 at 336) and Gemma 3's (SigLIP at 896,
# bilinear, no crop) preprocessor_config.json values.
LLAVA = {**CLIP, "size": {"shortest_edge": 336},
         "crop_size": {"height": 336, "width": 336}}
GEMMA3 = {
    "do_resize": True, "size": {"height": 896, "width": 896}, "resample": 2,
    "do_rescale": True, "rescale_factor": 0.00392156862745098,
    "do_normalize": True, "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
}
# SmolVLM's tiles: 364 x 364 with LANCZOS (its splitting is not implemented:
# the filter on a fixed size).
LANCZOS = {**SIGLIP, "size": {"height": 364, "width": 364}, "resample": 1}
# A small-side upscale with bilinear resampling and a crop larger than
# the resized image on one side (center_crop pads).
BILINEAR = {
    "do_resize": True, "size": {"shortest_edge": 40}, "resample": 2,
    "do_center_crop": True, "crop_size": {"height": 48, "width": 36},
    "do_rescale": True, "rescale_factor": 0.00392156862745098,
    "do_normalize": True, "image_mean": [0.1, 0.2, 0.3],
    "image_std": [0.7, 0.8, 0.9],
}


def _photo(w, h, seed):
    return images_lib.photo(w, h, seed)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    d = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(7)
    out = []
    p = d / "noise_rgb.png"
    Image.fromarray(rng.integers(0, 256, (300, 451, 3), dtype=np.uint8)).save(p)
    out.append(p)
    p = d / "rgba.png"
    rgba = np.concatenate([_photo(200, 317, 1),
                           rng.integers(0, 256, (317, 200, 1), dtype=np.uint8)],
                          axis=-1)
    Image.fromarray(rgba, "RGBA").save(p)
    out.append(p)
    p = d / "gray.png"
    Image.fromarray(_photo(64, 50, 2)[..., 0], "L").save(p)
    out.append(p)
    p = d / "palette.png"
    Image.fromarray(_photo(97, 131, 3)).quantize(64).save(p)
    out.append(p)
    p = d / "photo.jpg"
    Image.fromarray(_photo(640, 480, 4)).save(p, quality=90)
    out.append(p)
    p = d / "progressive.jpg"
    Image.fromarray(_photo(123, 457, 5)).save(p, quality=85, progressive=True)
    out.append(p)
    return out


@pytest.mark.parametrize("cfg,cls", [
    (CLIP, "CLIPImageProcessorPil"),
    (SIGLIP, "SiglipImageProcessorPil"),
    (LLAVA, "CLIPImageProcessorPil"),
    (GEMMA3, "Gemma3ImageProcessorPil"),
    (LANCZOS, "SiglipImageProcessorPil"),
    (BILINEAR, "CLIPImageProcessorPil"),
])
def test_pixels_match_the_processor(images, cfg, cls):
    if etllm.preprocess_image is None:
        pytest.skip("the runtime was built without libpng/libjpeg")
    processor = getattr(transformers, cls)(**cfg)
    for path in images:
        with Image.open(path) as im:
            ref = processor(im, return_tensors="np")["pixel_values"][0]
        got = etllm.preprocess_image(str(path), json.dumps(cfg))
        assert got.shape == ref.shape, path.name
        assert got.dtype == np.float32
        diff = float(np.abs(got - ref).max())
        assert diff <= 1e-5, f"{path.name} ({cls}): max |diff| {diff}"


def test_bad_inputs_are_one_error(tmp_path):
    if etllm.preprocess_image is None:
        pytest.skip("the runtime was built without libpng/libjpeg")
    p = tmp_path / "broken.png"
    good = tmp_path / "good.png"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(good)
    p.write_bytes(good.read_bytes()[:40])
    with pytest.raises(etllm.Error, match="broken.png"):
        etllm.preprocess_image(str(p), json.dumps(CLIP))
    with pytest.raises(etllm.Error, match="resample"):
        etllm.preprocess_image(str(good), json.dumps({**CLIP, "resample": 5}))
    # SmolVLM / Idefics3: image splitting is not implemented.
    idefics3 = {**SIGLIP, "resample": 1, "do_image_splitting": True}
    with pytest.raises(etllm.Error, match="do_image_splitting"):
        etllm.preprocess_image(str(good), json.dumps(idefics3))
    gif = tmp_path / "x.gif"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(gif)
    with pytest.raises(etllm.Error, match="not a PNG or JPEG"):
        etllm.preprocess_image(str(gif), json.dumps(CLIP))


@pytest.mark.parametrize("w,h,cw,ch", [
    (10, 7, 13, 4), (10, 7, 4, 13), (9, 9, 12, 12), (12, 5, 7, 9),
    (5, 12, 9, 7), (8, 8, 3, 5),
])
def test_center_crop_pads_as_transformers(tmp_path, w, h, cw, ch):
    """Crops larger on one side, both or neither, odd and even margins."""
    if etllm.preprocess_image is None:
        pytest.skip("the runtime was built without libpng/libjpeg")
    rng = np.random.default_rng(w * 100 + h)
    path = tmp_path / "c.png"
    Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(path)
    cfg = {"do_resize": False, "do_center_crop": True,
           "crop_size": {"height": ch, "width": cw}, "do_rescale": True,
           "rescale_factor": 0.00392156862745098, "do_normalize": False}
    processor = transformers.CLIPImageProcessorPil(**cfg)
    with Image.open(path) as im:
        ref = processor(im, return_tensors="np")["pixel_values"][0]
    got = etllm.preprocess_image(str(path), json.dumps(cfg))
    assert got.shape == ref.shape == (3, ch, cw)
    assert float(np.abs(got - ref).max()) <= 1e-5


@pytest.mark.parametrize("resample", [1, 2, 3])
def test_resize_matches_pillow_across_sizes(tmp_path, resample):
    """Pillow's own resize on 40 random size pairs (up, down, mixed: both
    orders of its two passes), byte for byte."""
    if etllm.preprocess_image is None:
        pytest.skip("the runtime was built without libpng/libjpeg")
    rng = np.random.default_rng(resample)
    path = tmp_path / "r.png"
    for _ in range(40):
        w, h, W, H = (int(v) for v in rng.integers(3, 160, 4))
        a = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        Image.fromarray(a).save(path)
        cfg = {"do_resize": True, "size": {"height": H, "width": W},
               "resample": resample, "do_rescale": False,
               "do_normalize": False}
        got = etllm.preprocess_image(str(path), json.dumps(cfg))
        ref = np.array(Image.fromarray(a).resize((W, H), resample=resample))
        assert np.array_equal(got.transpose(1, 2, 0), ref.astype(np.float32)), \
            (w, h, W, H, resample)
