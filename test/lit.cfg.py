# -*- Python -*- lit configuration of the HeterPS test suite.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "HeterPS"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.heterps_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%heterps_src_root", config.heterps_src_root))
config.substitutions.append(("%heterps_tools_dir", config.heterps_tools_dir))
config.substitutions.append(("%heterps_version", config.heterps_version))

llvm_config.with_system_environment(["HOME", "TMPDIR"])
llvm_config.use_default_substitutions()

# FileCheck, not, count and split-file come from LLVM; heterps-opt from here.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.heterps_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["heterps-opt", "heterps-run", "heterps-ps"],
                                  tool_dirs)

# Debian's interpreter: it sees python3-onnx and python3-torch, which a
# pyenv python3 on PATH may not.
config.substitutions.append(("%python", "/usr/bin/python3"))

if config.cuda_enabled:
    config.available_features.add("cuda")
