"""Running programs: Program (any method, NumPy in and out) and Runner (text
generation through the runtime's tokenizer and sampler, as etllm-run)."""

import atexit
import codecs
import os
import queue
import threading
import weakref

from . import _etllm

Program = _etllm.Program

# Generations still running on their threads. The interpreter waits for them
# when it exits: a thread stopped inside the runtime at exit aborts the
# process ("terminate called without an active exception"), for example
# after `print(runner.generate(...))` with the text never read.
_running = weakref.WeakSet()


@atexit.register
def _finish_running_generations():
    for g in list(_running):
        g._thread.join()


class Generation:
    """The text of one Runner.generate call.

    Iterating yields the text as it is generated (str pieces; a character
    split across tokens is held back until it is complete). `text` is the
    whole text and `stats` the runtime's statistics (a dict: prompt and
    generated token counts, stop reason, load/prefill/decode times and
    rates, peak RSS), both available once generation ends (reading them
    waits for it).
    """

    _DONE = object()

    def __init__(self, start, callback):
        self._pieces = []
        self._stats = None
        self._error = None
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        if callback is not None:
            # Synchronous: every piece goes to the callback as it comes.
            def on_text(b):
                s = self._decoder.decode(b)
                if s:
                    self._pieces.append(s)
                    callback(s)
            self._stats = start(on_text)
            tail = self._decoder.decode(b"", final=True)
            if tail:
                self._pieces.append(tail)
                callback(tail)
            self._queue = None
            return
        self._queue = queue.Queue()

        def run():
            try:
                self._stats = start(self._queue.put)
            except BaseException as e:  # re-raised in the consumer
                self._error = e
            self._queue.put(Generation._DONE)

        self._thread = threading.Thread(target=run, daemon=True)
        _running.add(self)
        self._thread.start()

    def __iter__(self):
        yield from self._pieces_so_far()

    def _pieces_so_far(self):
        yield from list(self._pieces)
        if self._queue is None:
            return
        while True:
            b = self._queue.get()
            if b is Generation._DONE:
                self._queue = None
                tail = self._decoder.decode(b"", final=True)
                if tail:
                    self._pieces.append(tail)
                    yield tail
                if self._error is not None:
                    raise self._error
                return
            s = self._decoder.decode(b)
            if s:
                self._pieces.append(s)
                yield s

    def wait(self):
        for _ in self._pieces_so_far():
            pass
        return self

    @property
    def text(self):
        self.wait()
        return "".join(self._pieces)

    @property
    def stats(self):
        self.wait()
        return self._stats


class Runner:
    """Generates text with a program (forward(tokens, positions) -> logits).

    The tokenizer is the program's own (embedded, or a GGUF vocabulary) or
    `tokenizer`; sampling is the runtime's sampler; `stats` holds the
    statistics of the last generation.
    """

    def __init__(self, path, tokenizer=None, threads=1, max_memory=0):
        # max_memory: bytes; a program planning more is refused at load
        # (0 = the machine's physical memory).
        self._runner = _etllm.Runner(os.fspath(path),
                                     os.fspath(tokenizer) if tokenizer else "",
                                     threads, max_memory)
        self.stats = None

    @property
    def max_seq_len(self):
        return self._runner.max_seq_len

    @property
    def image_preprocessor(self):
        """preprocessor_config.json of a composite model's program (the
        image processor its images go through), else None."""
        return self._runner.image_preprocessor

    def _pixels(self, image):
        if isinstance(image, (str, os.PathLike)):
            config = self.image_preprocessor
            if config is None:
                raise _etllm.Error(
                    "the program has no vision encoder (images need a "
                    "composite model's program, e.g. LLaVA's)")
            rows, cols, tiles, global_image = _etllm.preprocess_image_tiles(
                os.fspath(image), config)
            # An image the processor splits into tiles goes as all of them.
            return (rows, cols, tiles, global_image) if rows * cols \
                else global_image
        return image

    def encode(self, text, add_bos=True):
        return self._runner.encode(text, add_bos)

    def decode(self, ids):
        """The bytes of token `ids` (each piece as generation prints it)."""
        return self._runner.decode(list(ids))

    def generate(self, prompt, max_new_tokens=128, temperature=0.8, top_p=0.9,
                 top_k=0, min_p=0.0, seed=0, stop=(), repetition_penalty=1.0,
                 add_bos=True, callback=None, shift_context=False,
                 sink_tokens=4, images=()):
        """Generates from `prompt` (the KV cache starts empty).

        temperature 0 is greedy; top_k 0, top_p 1 and min_p 0 turn those
        filters off; generation stops at EOS, a `stop` string (not emitted),
        max_new_tokens or the context, unless shift_context: then a full
        context keeps its first `sink_tokens` tokens, drops the older half
        of the rest, prefills the kept ones again and goes on (etllm-run's
        default; docs/Runtime.md). With `callback`, each piece of text
        is passed to it as it is produced and this returns when generation
        is done; without, the returned Generation streams the pieces when
        iterated.

        `images` (a composite model's program, e.g. LLaVA's): PNG or JPEG
        paths, decoded and preprocessed as the program's image processor
        says, or float32 pixels [3, H, W] already preprocessed. Each goes at
        the prompt's next "<image>", or before the text when it has none.
        """
        if isinstance(stop, str):
            stop = [stop]
        pixels = [self._pixels(i) for i in images]

        def start(on_text):
            stats = self._runner.generate(
                prompt, max_new_tokens, temperature, top_p, top_k, min_p,
                repetition_penalty, seed, list(stop), add_bos, on_text,
                shift_context, sink_tokens, pixels)
            self.stats = stats
            return stats

        return Generation(start, callback)
