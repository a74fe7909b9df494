# Fails when a generated doc in docs/generated differs from a fresh build of
# it: run `cmake --build build --target etllm-docs` and commit the result.
# Usage: cmake -DGENERATED=<file> -DCOMMITTED=<file> -P CheckGeneratedDocs.cmake
file(READ "${GENERATED}" generated)
if(NOT EXISTS "${COMMITTED}")
  message(FATAL_ERROR "${COMMITTED} is missing; run: cmake --build build --target etllm-docs")
endif()
file(READ "${COMMITTED}" committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "${COMMITTED} is out of date with the .td files; run: cmake --build build --target etllm-docs")
endif()
