"""Test images shared by the Python tests (test_image_preprocess and the
composite models' tests)."""

import numpy as np
from PIL import Image


def photo(w, h, seed, noise=12):
    """A smooth picture with noise (what JPEG is made for), uint8 [h, w, 3]."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255.0 / max(w - 1, 1), y * 255.0 / max(h - 1, 1),
                     (x + y) * 127.0 / max(w + h - 2, 1)], axis=-1)
    noisy = base + rng.normal(0, noise, base.shape)
    return np.clip(noisy, 0, 255).astype(np.uint8)


def five_images(directory, seed):
    """Five images of different sizes and formats a vision model's processor
    is held to: a noise PNG 64 x 48, a JPEG 40 x 30, an RGBA PNG 33 x 95, a
    gray PNG 120 x 77 and a progressive JPEG 257 x 131. Their paths."""
    rng = np.random.default_rng(seed)
    out = []
    p = directory / "noise.png"
    Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(p)
    out.append(p)
    p = directory / "photo.jpg"
    Image.fromarray(photo(40, 30, 1, noise=40)).save(p, quality=90)
    out.append(p)
    p = directory / "rgba.png"
    rgba = np.concatenate([photo(33, 95, 2, noise=40),
                           rng.integers(0, 256, (95, 33, 1), dtype=np.uint8)],
                          axis=-1)
    Image.fromarray(rgba, "RGBA").save(p)
    out.append(p)
    p = directory / "gray.png"
    Image.fromarray(photo(120, 77, 3, noise=40)[..., 0], "L").save(p)
    out.append(p)
    p = directory / "progressive.jpg"
    Image.fromarray(photo(257, 131, 4, noise=40)).save(p, quality=85,
                                                        progressive=True)
    out.append(p)
    return out
