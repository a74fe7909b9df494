# Fails when a committed generated file (docs/generated, the runtime's
# ops.def) differs from a fresh generation of it, naming the command that
# refreshes it.
# Usage: cmake -DGENERATED=<file> -DCOMMITTED=<file> -DREFRESH=<command>
#              -P CheckGeneratedFile.cmake
file(READ "${GENERATED}" generated)
if(NOT EXISTS "${COMMITTED}")
  message(FATAL_ERROR "${COMMITTED} is missing; run: ${REFRESH}")
endif()
file(READ "${COMMITTED}" committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "${COMMITTED} is out of date with the .td files it is "
          "generated from (generated: ${GENERATED}); run: ${REFRESH}")
endif()
