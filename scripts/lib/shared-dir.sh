# Sourced by the scripts that need the shared test data (models,
# tokenizers, reference outputs): sets SHARED to $ETLLM_SHARED_DIR, else to
# the first of ../shared and /work/shared that has models/, as an absolute
# path; empty when there is none (the caller decides whether that is an
# error).
SHARED=${ETLLM_SHARED_DIR:-}
if [ -z "$SHARED" ]; then
  for candidate in ../shared /work/shared; do
    if [ -d "$candidate/models" ]; then SHARED=$candidate; break; fi
  done
fi
if [ -n "$SHARED" ]; then SHARED=$(cd "$SHARED" && pwd); fi
