"""Exits 0 where the step `parplan simulate` printed in FAST is at least
RATIO times shorter than the one in SLOW, else 1 with both steps
(test/tools/parplan/placement.test)."""
import re
import sys

UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def step(path):
    for line in open(path):
        found = re.match(r"\s*step\s+([0-9.]+) (s|ms|us) simulated", line)
        if found:
            return float(found.group(1)) * UNITS[found.group(2)]
    sys.exit(f"{path}: no simulated step")


fast, slow, ratio = step(sys.argv[1]), step(sys.argv[2]), float(sys.argv[3])
if fast * ratio > slow:
    sys.exit(f"{fast} s is not {ratio} times shorter than {slow} s")
