/*===- c_api.h - The etllm runtime's C API ------------------------*- C -*-===*
 *
 * For apps that cannot call C++ (JNI on Android, Swift on iOS/macOS, any
 * FFI): plain C types only, no C++ type or exception crosses it. Load a
 * program file, generate text with a callback per piece, read the
 * statistics, destroy. Every function that can fail returns NULL or a
 * non-zero status and leaves a message in etllm_last_error().
 *
 * Thread safety: one runner is used by one thread at a time; distinct
 * runners may run on distinct threads. etllm_last_error() is per thread.
 *
 * Structs that carry options start with `struct_size`: fill them with the
 * _init functions, so a later version can append fields.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ETLLM_RUNTIME_C_API_H
#define ETLLM_RUNTIME_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ETLLM_C_EXPORT __declspec(dllexport)
#else
#define ETLLM_C_EXPORT __attribute__((visibility("default")))
#endif

/** Version of this API (incremented when functions or fields are added;
 *  2: etllm_runner_options.max_memory; 3: the etllm_lora functions). */
#define ETLLM_C_API_VERSION 4

typedef enum etllm_status {
  ETLLM_OK = 0,
  /** A failure: see etllm_last_error(). */
  ETLLM_ERROR = 1,
  /** A NULL pointer or an out-of-range value was passed. */
  ETLLM_INVALID_ARGUMENT = 2,
} etllm_status;

typedef struct etllm_runner etllm_runner;
typedef struct etllm_chat etllm_chat;
typedef struct etllm_lora etllm_lora;

typedef struct etllm_runner_options {
  size_t struct_size;
  /** Kernel threads; 0 = one per hardware thread; at most the hardware
   *  threads (more is ETLLM_INVALID_ARGUMENT). */
  int32_t num_threads;
  /** A tokenizer file to use instead of the program's own; NULL = none. */
  const char *tokenizer_path;
  /** The memory budget in bytes (etllm-run's --max-memory): a program
   *  whose planned memory (arenas, mutable buffers, what its delegates
   *  allocate at load) is larger is refused by etllm_runner_create before
   *  it is allocated, with the numbers in etllm_last_error(). 0 = the
   *  machine's physical memory (the default). Since API version 2; a
   *  struct_size of version 1 (without this field) gets the default. */
  uint64_t max_memory;
} etllm_runner_options;

typedef struct etllm_generation_config {
  size_t struct_size;
  /** Tokens to generate at most (default 128). */
  int32_t max_new_tokens;
  /** 0 = greedy (default 0.8). */
  float temperature;
  /** 0 = off (default 0). */
  int32_t top_k;
  /** Nucleus sampling (default 0.9). */
  float top_p;
  /** 0 = off (default 0). */
  float min_p;
  /** > 1 discourages repeats (default 1). */
  float repetition_penalty;
  /** Random seed (default 0). */
  uint64_t seed;
  /** Prepend BOS to the prompt (default 1). */
  int32_t add_bos;
} etllm_generation_config;

/** Statistics of the last generation (times in milliseconds). */
typedef struct etllm_stats {
  size_t struct_size;
  double load_ms, ttft_ms, prefill_ms, decode_ms, sampling_ms;
  int64_t prompt_tokens, generated_tokens;
  double prefill_tokens_per_second, decode_tokens_per_second;
  uint64_t peak_rss_bytes;
  /** "eos", "max_new_tokens", "stop_string", "context", "interrupted". */
  char stop_reason[32];
  /** Tokens whose KV state was reused (a chat's earlier turns), and the
   * tokens in the KV cache afterwards. */
  int64_t cached_tokens, context_tokens;
} etllm_stats;

/**
 * Receives the generated text as it is produced (`length` bytes, not
 * NUL-terminated; a multi-byte character may be split across calls).
 * Return 0 to go on, non-zero to stop generating (stop reason
 * "interrupted").
 */
typedef int (*etllm_text_callback)(const char *text, size_t length,
                                   void *user_data);

ETLLM_C_EXPORT void etllm_runner_options_init(etllm_runner_options *options);
ETLLM_C_EXPORT void
etllm_generation_config_init(etllm_generation_config *config);

/** Loads and verifies a program file. NULL on failure. `options` may be
 * NULL (defaults). */
ETLLM_C_EXPORT etllm_runner *
etllm_runner_create(const char *program_path,
                    const etllm_runner_options *options);

/** Generates a continuation of `prompt` (UTF-8, NUL-terminated). `config`
 * may be NULL (defaults). */
ETLLM_C_EXPORT etllm_status
etllm_runner_generate(etllm_runner *runner, const char *prompt,
                      const etllm_generation_config *config,
                      etllm_text_callback on_text, void *user_data);

/** A composite model's (LLaVA's) continuation of `prompt` and
 * `num_images` images, PNG or JPEG files at `image_paths`: each goes at the
 * prompt's next "<image>", or, when the prompt has none, before its text.
 * Each is decoded and preprocessed as the program's image processor says
 * (recorded at export). ETLLM_ERROR, naming the problem, for a program
 * without a vision encoder, a corrupt or oversized image, a placeholder
 * count that differs from num_images, or a runtime built without libpng
 * and libjpeg. Since API version 4. */
ETLLM_C_EXPORT etllm_status etllm_runner_generate_with_images(
    etllm_runner *runner, const char *prompt, const char *const *image_paths,
    size_t num_images, const etllm_generation_config *config,
    etllm_text_callback on_text, void *user_data);

/** The images of the last successful generation and the vision encoder's
 * time for them (milliseconds, part of prefill_ms). Since API version 4. */
ETLLM_C_EXPORT etllm_status etllm_runner_image_stats(
    const etllm_runner *runner, int64_t *images, double *encode_ms);

/** The statistics of the last successful etllm_runner_generate. */
ETLLM_C_EXPORT etllm_status etllm_runner_stats(const etllm_runner *runner,
                                               etllm_stats *stats);

/** The model's context length (max_seq_len, in tokens); 0 for NULL. */
ETLLM_C_EXPORT int64_t etllm_runner_context_length(const etllm_runner *runner);

/** A conversation with the program's chat template (see
 * etllm/runtime/llm/chat.h): the KV cache is kept across turns, so a turn
 * prefills only its new tokens. `system_prompt` may be NULL. The runner
 * must outlive the chat; one chat per runner at a time. NULL on failure
 * (e.g. the program carries no chat template). */
ETLLM_C_EXPORT etllm_chat *etllm_chat_create(etllm_runner *runner,
                                             const char *system_prompt);

/** Adds the user's message and streams the reply (which ends at the
 * template's end of turn). Statistics: etllm_runner_stats on its runner. */
ETLLM_C_EXPORT etllm_status
etllm_chat_send(etllm_chat *chat, const char *user_message,
                const etllm_generation_config *config,
                etllm_text_callback on_text, void *user_data);

/** etllm_chat_send with images (a composite model's program): each goes at
 * the message's next "<image>", or the message starts with them; they stay
 * part of the conversation. Errors as etllm_runner_generate_with_images'.
 * Since API version 4. */
ETLLM_C_EXPORT etllm_status etllm_chat_send_with_images(
    etllm_chat *chat, const char *user_message, const char *const *image_paths,
    size_t num_images, const etllm_generation_config *config,
    etllm_text_callback on_text, void *user_data);

/** Back to the start of the conversation (the system message only). */
ETLLM_C_EXPORT void etllm_chat_reset(etllm_chat *chat);

/** Frees a chat (NULL is fine). */
ETLLM_C_EXPORT void etllm_chat_destroy(etllm_chat *chat);

/** Loads a LoRA adapter file (.etla, written by etllm-export-lora for this
 * runner's program) and checks it completely: the base program's content
 * hash, every target a hook of the program with its shape, the rank within
 * the program's maximum, every value finite; errors name the file and the
 * tensor. Loading applies nothing. The runner must outlive the adapter.
 * NULL on failure (the runner keeps working). Since API version 3. */
ETLLM_C_EXPORT etllm_lora *etllm_lora_load(etllm_runner *runner,
                                           const char *path);

/** Applies the adapter with `scale` (finite), or changes the scale of an
 * applied one. Several adapters may be applied at once, each with its own
 * scale; the base weights are neither touched nor copied, so switching
 * costs no reload. The runner's KV cache is forgotten (a chat on it
 * prefills its conversation again on its next turn). */
ETLLM_C_EXPORT etllm_status etllm_lora_apply(etllm_lora *lora, float scale);

/** Takes an applied adapter off (the base output again, bit for bit) and
 * forgets the KV cache; an error if it is not applied. */
ETLLM_C_EXPORT etllm_status etllm_lora_remove(etllm_lora *lora);

/** Takes the adapter off if applied, then frees it (NULL is fine). */
ETLLM_C_EXPORT void etllm_lora_destroy(etllm_lora *lora);

/** Frees a runner (NULL is fine). */
ETLLM_C_EXPORT void etllm_runner_destroy(etllm_runner *runner);

/** The message of this thread's last failure ("" when none); valid until
 * the next call into this API from the same thread. */
ETLLM_C_EXPORT const char *etllm_last_error(void);

/** "0.1.0". */
ETLLM_C_EXPORT const char *etllm_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ETLLM_RUNTIME_C_API_H */
