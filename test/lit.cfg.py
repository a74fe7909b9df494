# -*- Python -*-
import os
import sys

import lit.formats
from lit.llvm import llvm_config

config.name = "ETLLM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".yaml"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "CMakeLists.txt",
                   "Inputs", "unittests", "README.md"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.etllm_obj_root, "test")

config.substitutions.append(("%shared", config.etllm_shared_dir))
config.substitutions.append(("%etllm_src", config.etllm_src_root))
config.substitutions.append(("%etllm_bin", config.etllm_tools_dir))
config.substitutions.append(("%etllm_lib", config.etllm_obj_root + "/lib"))
config.substitutions.append(("%mlir_include", config.mlir_include_dir))
# The build's C++ compiler, for tests that compile generated code (the model
# config's scratch field, Tools/etllm-tblgen/model-config-field.td).
config.substitutions.append(("%cxx", config.cxx_compiler))
# The interpreter running lit: the project's (scripts/venv.sh, CMake's
# Python3_EXECUTABLE), which has jinja2 for the chat-template conformance
# test; the other checker scripts use the standard library only.
config.substitutions.append(("%python", sys.executable))

llvm_config.use_default_substitutions()
# Sanitizer builds (scripts/sanitize.sh): the runtime options and the
# malformed-input suite's allowances reach the tests.
llvm_config.with_system_environment(
    ["ASAN_OPTIONS", "UBSAN_OPTIONS", "ETLLM_SANITIZED", "ETLLM_TIME_SCALE"])
llvm_config.with_environment("PATH", config.etllm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools = ["etllm-opt", "etllm-translate", "etllm-export", "etllm-run",
         "etllm-gen-checkpoint", "etllm-bench", "etllm-example-opt",
         "etllm-chat-template-render", "etllm-tblgen"]
llvm_config.add_tool_substitutions(
    [t for t in tools if os.path.exists(os.path.join(config.etllm_tools_dir, t))],
    config.etllm_tools_dir)

# Tests that run Vulkan programs (a runtime built with the Vulkan backend)
# say `REQUIRES: vulkan`; they run with the validation layer
# (ETLLM_VULKAN_VALIDATION: synchronization validation on, messages on
# stderr).
if getattr(config, "etllm_vulkan", "") in ("ON", "TRUE", "1"):
    config.available_features.add("vulkan")
llvm_config.with_system_environment(["XDG_RUNTIME_DIR", "VK_ICD_FILENAMES"])

# Tests that need ../shared (models, tokenizers) say `REQUIRES: shared`.
if os.path.isdir(config.etllm_shared_dir):
    config.available_features.add("shared")
