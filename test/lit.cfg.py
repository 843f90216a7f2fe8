# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "parplan"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".onnxtxt", ".td"]
# fuzz/: the fuzz targets' regression inputs, replayed by ctest
# (fuzz-regressions-*), not lit tests.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "consumer", "lib",
                   "Inputs", "fuzz"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.parplan_obj_root, "test")
config.substitutions.append(("%parplan_src_root", config.parplan_src_root))
config.substitutions.append(("%mlir_include_dir", config.mlir_include_dir))
# ONNX text has '#' comments only: cases in one file are separated by
# '# -----' lines. Spelled through a substitution so that the RUN line does
# not itself contain the marker.
config.substitutions.append(("%onnx-split", "--split-input-file='# -----'"))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tools = [
    ToolSubst("parplan-opt", unresolved="fatal"),
    ToolSubst("parplan", unresolved="fatal"),
    ToolSubst("parplan-translate", unresolved="fatal"),
    ToolSubst("parplan-zoo", unresolved="fatal"),
    ToolSubst("parplan-tblgen", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(tools, [config.parplan_tools_dir, config.llvm_tools_dir])

# `cuda-device`: a GPU is visible to `parplan calibrate` (it prints one line
# per GPU, or "no CUDA device: REASON"). calibrate.test runs without one,
# calibrate-gpu.test with one.
def parplan_sees_a_gpu():
    import subprocess
    parplan = os.path.join(config.parplan_tools_dir, "parplan")
    try:
        listing = subprocess.run([parplan, "calibrate", "--list-devices"],
                                 capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    lines = listing.stdout.splitlines()
    return (listing.returncode == 0 and bool(lines)
            and not lines[0].startswith("no CUDA device"))


if parplan_sees_a_gpu():
    config.available_features.add("cuda-device")
