# The defaults of a top-level etllm build, shared by the whole project
# (CMakeLists.txt) and the runtime built alone (runtime/CMakeLists.txt):
# C++17, compile_commands.json, Release unless told otherwise, and ccache
# when installed.
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  # Paths relative to the source tree, so that a fresh clone elsewhere
  # (CI) hits the cache this checkout filled.
  set(ETLLM_CCACHE_LAUNCHER ${CMAKE_COMMAND} -E env
      CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} CCACHE_NOHASHDIR=1 ${CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${ETLLM_CCACHE_LAUNCHER})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${ETLLM_CCACHE_LAUNCHER})
endif()
