"""Helpers of the composite models' tests (test_llava, test_gemma3_vision,
test_smolvlm): the model's own image processor, the text the runner prints
for generated tokens, etllm-run with images."""

import json
import subprocess


def image_processor(transformers, checkpoint, class_name):
    """transformers' `class_name` image processor configured by the
    checkpoint's preprocessor_config.json."""
    cfg = json.loads((checkpoint / "preprocessor_config.json").read_text())
    cfg.pop("image_processor_type", None)
    return getattr(transformers, class_name)(**cfg)


def text_after(runner, ids, generated):
    """What the runner prints for `generated` after the prompt `ids` (a
    piece's leading space depends on the token before it)."""
    return (runner.decode(ids[-1:] + generated)[len(runner.decode(ids[-1:])):]
            .decode("utf-8", "replace"))


def run_with_images(tool, program, images, n, prompt=None):
    """etllm-run's greedy output for `images` (default prompt: "Once" and an
    "<image> upon" per image)."""
    args = [tool("etllm-run"), str(program)]
    for image in images:
        args += ["--image", str(image)]
    if prompt is None:
        prompt = "Once" + "<image> upon" * len(images)
    return subprocess.run(
        args + ["--prompt", prompt, "-n", str(n), "--temperature", "0"],
        check=True, capture_output=True).stdout
