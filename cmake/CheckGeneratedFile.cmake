# Fails when a committed generated file differs from a fresh generation of
# it, naming the command that refreshes it.
# Usage: cmake -DGENERATED=<file> -DCOMMITTED=<file> -DREFRESH=<command>
#              -P CheckGeneratedFile.cmake
file(READ "${GENERATED}" generated)
if(NOT EXISTS "${COMMITTED}")
  message(FATAL_ERROR "${COMMITTED} is missing; run: ${REFRESH}")
endif()
file(READ "${COMMITTED}" committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "${COMMITTED} is out of date with the op contracts in "
          "the .td files (generated: ${GENERATED}); run: ${REFRESH}")
endif()
