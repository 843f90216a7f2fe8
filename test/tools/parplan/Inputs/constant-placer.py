#!/usr/bin/env python3
"""Writes the weights of a placer that needs no training (parplan-zoo gnn
--features 12, 2 layers of 32, 2 classes) into DIR/weights/, as
parplan-run --save-weights would, so that tests of --placer gnn know what
it proposes:
  best: the machine of best quick estimate alone (feature 5 passed to the
        "take part" logit, 8 f5 - 4: above one half only near f5 = 1);
  all:  every machine (the head's bias alone, 0 and 5).
Usage: constant-placer.py DIR best|all"""
import os
import struct
import sys

FEATURES, HIDDEN = 12, 32


def write(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        "".join("%d, " % d for d in shape) if len(shape) == 1 else
        ", ".join(str(d) for d in shape))
    padding = 64 - (10 + len(header) + 1) % 64
    header += " " * padding + "\n"
    with open(path, "wb") as out:
        out.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        out.write(header.encode("latin1"))
        out.write(struct.pack("<%df" % len(values), *values))


def zeros(*shape):
    count = 1
    for d in shape:
        count *= d
    return [0.0] * count


def main():
    directory, mode = sys.argv[1], sys.argv[2]
    weights = os.path.join(directory, "weights")
    os.makedirs(weights, exist_ok=True)
    tensors = {}
    width = FEATURES
    for layer in (1, 2):
        tensors["conv%d.self.weight" % layer] = ([HIDDEN, width], zeros(HIDDEN, width))
        tensors["conv%d.self.bias" % layer] = ([HIDDEN], zeros(HIDDEN))
        tensors["conv%d.neighbours.weight" % layer] = ([width, HIDDEN], zeros(width, HIDDEN))
        width = HIDDEN
    tensors["head.weight"] = ([2, HIDDEN], zeros(2, HIDDEN))
    tensors["head.bias"] = ([2], [0.0, 5.0] if mode == "all" else [4.0, 0.0])
    if mode == "best":
        tensors["conv1.self.weight"][1][5] = 8.0  # row 0, feature 5
        tensors["conv2.self.weight"][1][0] = 1.0  # row 0, unit 0
        tensors["head.weight"][1][HIDDEN] = 1.0  # class 1, unit 0
    for name, (shape, values) in tensors.items():
        write(os.path.join(weights, name + ".npy"), shape, values)


main()
