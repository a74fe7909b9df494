#!/usr/bin/env python3
"""Exports every (model, recipe) pair twice and checks the programs are
byte-identical. When etllm-export takes --threads (a parallel export), the
pair is also exported with each thread count given and every program must be
the same bytes.

  export_twice.py --work DIR --threads 1,2,4 MODEL[:TOKENIZER]...
"""
import argparse
import filecmp
import os
import subprocess
import sys

RECIPES = ["portable", "cpu-fp32", "cpu-int4", "cpu-8da4w",
           "cpu-int8"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    help_text = subprocess.run(["etllm-export", "--help"], capture_output=True,
                               text=True).stdout
    threads = [None]
    if "--threads" in help_text:
        threads += [int(t) for t in a.threads.split(",")]
    print("thread counts: %s" % ("default only" if threads == [None] else
                                 ", ".join(map(str, threads[1:])) +
                                 " and the default"))
    failed = 0
    for spec in a.models:
        model, _, tokenizer = spec.partition(":")
        for recipe in RECIPES:
            outputs = []
            for run, t in [(0, None), (1, None)] + [(2 + i, t) for i, t in
                                                    enumerate(threads[1:])]:
                # A different directory and name each time: neither may leak
                # into the bytes.
                d = os.path.join(a.work, "%s-%s-%d" %
                                 (os.path.basename(model), recipe, run))
                os.makedirs(d, exist_ok=True)
                out = os.path.join(d, "run%d.pte" % run)
                cmd = ["etllm-export", "--quiet", "--model", model,
                       "--pipeline", recipe, "-o", out]
                if tokenizer:
                    cmd += ["--tokenizer", tokenizer]
                if t is not None:
                    cmd += ["--threads", str(t)]
                subprocess.run(cmd, check=True)
                outputs.append((t, out))
            base = outputs[0][1]
            for t, out in outputs[1:]:
                if not filecmp.cmp(base, out, shallow=False):
                    failed += 1
                    print("DIFFER %s %s (threads %s): %s vs %s" %
                          (model, recipe, t, base, out))
            print("%s %-14s %d exports, %s" % (
                os.path.basename(model), recipe, len(outputs),
                "identical" if all(filecmp.cmp(base, o, shallow=False)
                                   for _, o in outputs) else "DIFFERENT"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
