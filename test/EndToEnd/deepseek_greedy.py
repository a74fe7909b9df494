"""Greedy tokens of the HF and GGUF programs of the DeepSeek checkpoints,
per recipe (deepseek.test).

usage: deepseek_greedy.py BIN_DIR WORK_DIR TOKENIZER RECIPE[:latent]...

WORK_DIR holds the checkpoints deepseek.test generated: v2, v2.gguf,
v2-joint.gguf, v3, v3.gguf. For each model and recipe every source is
exported and decoded greedily (etllm-run --temperature 0); the generated
texts must be identical. RECIPE:latent exports with model.mla_cache=latent
(the latent cache and the absorbed attention). Prints one line per model and recipe; exits
non-zero naming the first disagreement.
"""
import json
import os
import subprocess
import sys

MODELS = {"v2": ["v2", "v2.gguf", "v2-joint.gguf"], "v3": ["v3", "v3.gguf"]}
PROMPT = "Once upon a time"
TOKENS = 16


def run(cmd):
    p = subprocess.run(cmd, capture_output=True)
    if p.returncode != 0:
        sys.exit(f"deepseek_greedy: FAIL: {' '.join(cmd)}\n"
                 f"{p.stderr.decode(errors='replace')}")
    return p


def main():
    bin_dir, work, tokenizer, *recipes = sys.argv[1:]
    for model, sources in MODELS.items():
        for spec in recipes:
            recipe, _, cache = spec.partition(":")
            extra = ["--set", f"model.mla_cache={cache}"] if cache else []
            texts = {}
            for src in sources:
                pte = os.path.join(work, f"{src}-{recipe}-{cache}.pte")
                run([os.path.join(bin_dir, "etllm-export"), "--quiet",
                     "--model", os.path.join(work, src), "--tokenizer",
                     tokenizer, "--pipeline", recipe, *extra, "-o", pte])
                p = run([os.path.join(bin_dir, "etllm-run"), pte, "--prompt",
                         PROMPT, "-n", str(TOKENS), "--temperature", "0",
                         "--stats-json"])
                stats = json.loads(p.stderr.strip().splitlines()[-1].decode())
                if stats["generated_tokens"] != TOKENS:
                    sys.exit(f"deepseek_greedy: FAIL: {src} {spec}: "
                             f"{stats['generated_tokens']} tokens")
                texts[src] = p.stdout
            first = sources[0]
            for src in sources[1:]:
                if texts[src] != texts[first]:
                    sys.exit(f"deepseek_greedy: FAIL: {model} {spec}: "
                             f"{src} gave {texts[src]!r}, {first} "
                             f"{texts[first]!r}")
            print(f"{model} {spec}: {len(sources)} programs, same "
                  f"{TOKENS} tokens")


if __name__ == "__main__":
    main()
