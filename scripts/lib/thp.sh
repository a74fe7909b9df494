# Transparent huge pages for the llama.cpp comparison scripts (sourced by
# bench-vs-llamacpp.sh and bench-moe-vs-llamacpp.sh).
#
# THP (environment): "keep" the system's setting [default], or "always"
# (needs root; the setting is restored when the script exits). llama.cpp
# repacks Q4_0 weights into anonymous memory without asking for huge pages;
# etllm's program mappings ask (MADV_HUGEPAGE). Under the common "madvise"
# setting llama.cpp's weights therefore sit in 4 KiB pages, which on one
# Zen 5 VM made its 1-thread decode vary between 7 and 37 tok/s from run to
# run (docs/Performance.md). The scripts print the setting a run had.
THP_FILE=/sys/kernel/mm/transparent_hugepage/enabled

# The current setting (the bracketed word), or "unknown".
thp_mode() {
  sed -n 's/.*\[\([a-z]*\)\].*/\1/p' "$THP_FILE" 2>/dev/null | grep . || echo unknown
}

# thp_apply NAME: applies $THP for script NAME (its error messages).
thp_apply() {
  case "${THP:-keep}" in
    keep) ;;
    always)
      THP_WAS="$(thp_mode)"
      { echo always > "$THP_FILE"; } 2>/dev/null || {
        echo "$1: error: THP=always: cannot write $THP_FILE (needs root)" >&2
        exit 1
      }
      trap 'echo "$THP_WAS" > "$THP_FILE" 2>/dev/null || true' EXIT ;;
    *) echo "$1: error: THP must be keep or always, not '$THP'" >&2; exit 1 ;;
  esac
}
