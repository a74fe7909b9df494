"""Test images shared by the Python tests (test_image_preprocess,
test_llava)."""

import numpy as np


def photo(w, h, seed, noise=12):
    """A smooth picture with noise (what JPEG is made for), uint8 [h, w, 3]."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255.0 / max(w - 1, 1), y * 255.0 / max(h - 1, 1),
                     (x + y) * 127.0 / max(w + h - 2, 1)], axis=-1)
    noisy = base + rng.normal(0, noise, base.shape)
    return np.clip(noisy, 0, 255).astype(np.uint8)
