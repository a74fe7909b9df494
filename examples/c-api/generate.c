/* The C API on the installed etllm runtime (compiled as C): load a
 * program, generate with a callback, read the statistics, chat, describe
 * images with a composite model (LLaVA), and check the errors a caller can
 * make.
 *   generate_c MODEL.pte "Once upon a time" [CHAT_MODEL.pte
 *              [LLAVA_MODEL.pte IMAGE.png IMAGE.jpg]] */
#include <etllm/runtime/c_api.h>

#include <stdio.h>
#include <string.h>

static int on_text(const char *text, size_t length, void *user_data) {
  size_t *pieces = (size_t *)user_data;
  fwrite(text, 1, length, stdout);
  ++*pieces;
  return 0; /* go on */
}

static int stop_after_three(const char *text, size_t length, void *user_data) {
  (void)text;
  (void)length;
  return ++*(int *)user_data >= 3;
}

/* Collects up to 255 bytes of generated text. */
typedef struct text_buffer {
  char bytes[256];
  size_t length;
} text_buffer;

static int collect(const char *text, size_t length, void *user_data) {
  text_buffer *b = (text_buffer *)user_data;
  size_t room = sizeof b->bytes - 1 - b->length;
  size_t n = length < room ? length : room;
  memcpy(b->bytes + b->length, text, n);
  b->length += n;
  b->bytes[b->length] = 0;
  return 0;
}

static int check(int ok, const char *what) {
  if (!ok)
    fprintf(stderr, "FAIL: %s (last error: %s)\n", what, etllm_last_error());
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  etllm_runner_options options;
  etllm_generation_config config;
  etllm_stats stats;
  etllm_runner *runner;
  size_t pieces = 0;
  int calls = 0, failures = 0;
  if (argc != 3 && argc != 4 && argc != 7) {
    fprintf(stderr,
            "usage: %s MODEL.pte PROMPT [CHAT_MODEL.pte [LLAVA_MODEL.pte "
            "IMAGE.png IMAGE.jpg]]\n",
            argv[0]);
    return 2;
  }
  /* Errors are values with a message, never crashes. */
  failures += check(etllm_runner_create("/nonexistent.pte", NULL) == NULL &&
                        strstr(etllm_last_error(), "/nonexistent.pte") != NULL,
                    "a missing file is an error naming it");
  failures += check(etllm_runner_create(NULL, NULL) == NULL &&
                        strcmp(etllm_last_error(), "program_path is NULL") == 0,
                    "NULL path");
  failures += check(etllm_runner_stats(NULL, &stats) == ETLLM_INVALID_ARGUMENT,
                    "NULL runner");
  etllm_runner_destroy(NULL);

  etllm_runner_options_init(&options);
  options.num_threads = 2;
  runner = etllm_runner_create(argv[1], &options);
  if (check(runner != NULL, "create"))
    return 1;
  failures += check(etllm_runner_stats(runner, &stats) == ETLLM_ERROR,
                    "no statistics before a generation");
  etllm_generation_config_init(&config);
  config.max_new_tokens = 48;
  config.temperature = 0.0f; /* greedy */
  printf("%s", argv[2]);
  failures += check(etllm_runner_generate(runner, argv[2], &config, on_text,
                                          &pieces) == ETLLM_OK,
                    "generate");
  printf("\n");
  failures += check(etllm_runner_stats(runner, &stats) == ETLLM_OK &&
                        stats.generated_tokens > 0 &&
                        (size_t)stats.generated_tokens >= pieces,
                    "statistics");
  fprintf(stderr, "%lld prompt tokens, %lld generated (%s), %.0f tokens/s\n",
          (long long)stats.prompt_tokens, (long long)stats.generated_tokens,
          stats.stop_reason, stats.decode_tokens_per_second);
  /* The callback stops generation. */
  failures += check(etllm_runner_generate(runner, argv[2], &config,
                                          stop_after_three, &calls) == ETLLM_OK,
                    "generate with a stopping callback");
  failures +=
      check(etllm_runner_stats(runner, &stats) == ETLLM_OK &&
                strcmp(stats.stop_reason, "interrupted") == 0 && calls == 3,
            "the callback stopped generation");
  config.top_p = 2.0f;
  failures += check(etllm_runner_generate(runner, argv[2], &config, NULL,
                                          NULL) == ETLLM_INVALID_ARGUMENT,
                    "an out-of-range setting is refused");
  failures += check(etllm_runner_context_length(runner) > 0, "context length");
  failures += check(etllm_chat_create(runner, NULL) == NULL &&
                        strstr(etllm_last_error(), "no chat template") != NULL,
                    "a program without a chat template cannot chat");
  etllm_runner_destroy(runner);

  if (argc >= 4) {
    /* Two turns: the second reuses the KV cache of the first. */
    etllm_chat *chat;
    runner = etllm_runner_create(argv[3], &options);
    if (check(runner != NULL, "create the chat runner"))
      return 1;
    chat = etllm_chat_create(runner, "You tell short stories.");
    if (check(chat != NULL, "chat create"))
      return 1;
    etllm_generation_config_init(&config);
    config.temperature = 0.0f;
    config.max_new_tokens = 24;
    pieces = 0;
    failures += check(etllm_chat_send(chat, "Tell me a story.", &config,
                                      on_text, &pieces) == ETLLM_OK &&
                          pieces > 0,
                      "first chat turn");
    printf("\n");
    failures += check(etllm_chat_send(chat, "And then?", &config, on_text,
                                      &pieces) == ETLLM_OK,
                      "second chat turn");
    printf("\n");
    failures += check(etllm_runner_stats(runner, &stats) == ETLLM_OK &&
                          stats.cached_tokens > 0 &&
                          stats.context_tokens > stats.cached_tokens,
                      "the second turn reused the KV cache");
    fprintf(stderr, "chat: second turn reused %lld tokens, prefilled %lld\n",
            (long long)stats.cached_tokens, (long long)stats.prompt_tokens);
    etllm_chat_reset(chat);
    etllm_chat_destroy(chat);
    etllm_chat_destroy(NULL);
    etllm_runner_destroy(runner);
  }
  if (argc == 7) {
    /* Images at the prompt's <image>: each image's own text. */
    const char *png[1], *jpg[1], *both[2];
    text_buffer a, b;
    int64_t images = 0;
    double encode_ms = 0;
    png[0] = argv[5];
    jpg[0] = argv[6];
    both[0] = argv[5];
    both[1] = argv[6];
    runner = etllm_runner_create(argv[4], &options);
    if (check(runner != NULL, "create the LLaVA runner"))
      return 1;
    etllm_generation_config_init(&config);
    config.temperature = 0.0f;
    config.max_new_tokens = 12;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    failures += check(etllm_runner_generate_with_images(
                          runner, "Once upon a<image> time", png, 1, &config,
                          collect, &a) == ETLLM_OK &&
                          a.length > 0,
                      "generate with a PNG");
    failures += check(etllm_runner_image_stats(runner, &images, &encode_ms) ==
                              ETLLM_OK &&
                          images == 1 && encode_ms > 0,
                      "image statistics");
    failures += check(etllm_runner_generate_with_images(
                          runner, "Once upon a<image> time", jpg, 1, &config,
                          collect, &b) == ETLLM_OK &&
                          b.length > 0 && strcmp(a.bytes, b.bytes) != 0,
                      "generate with a JPEG: another text");
    printf("image (PNG): %s\nimage (JPEG): %s\n", a.bytes, b.bytes);
    failures += check(etllm_runner_generate_with_images(
                          runner, "One <image> only", both, 2, &config, NULL,
                          NULL) == ETLLM_ERROR &&
                          strstr(etllm_last_error(), "placeholders") != NULL,
                      "a placeholder count that differs is refused");
    png[0] = "/nonexistent.png";
    failures += check(etllm_runner_generate_with_images(
                          runner, "A", png, 1, &config, NULL, NULL) ==
                              ETLLM_ERROR &&
                          strstr(etllm_last_error(), "/nonexistent.png") != NULL,
                      "a missing image is an error naming it");
    failures += check(etllm_runner_generate_with_images(
                          runner, "A", NULL, 1, &config, NULL, NULL) ==
                          ETLLM_INVALID_ARGUMENT,
                      "NULL image paths");
    {
      /* A chat whose first message carries the PNG. */
      etllm_chat *chat = etllm_chat_create(runner, NULL);
      memset(&a, 0, sizeof a);
      failures += check(chat != NULL &&
                            etllm_chat_send_with_images(chat, "Describe it.",
                                                        png, 0, &config,
                                                        collect, &a) ==
                                ETLLM_OK,
                        "a chat turn without an image");
      png[0] = argv[5];
      failures += check(etllm_chat_send_with_images(chat, "And this?", png, 1,
                                                    &config, collect, &a) ==
                                ETLLM_OK &&
                            etllm_runner_image_stats(runner, &images,
                                                     &encode_ms) == ETLLM_OK &&
                            images == 1,
                        "a chat turn with an image");
      etllm_chat_destroy(chat);
    }
    etllm_runner_destroy(runner);
  }
  fprintf(stderr, "etllm %s C API: %s\n", etllm_version(),
          failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
