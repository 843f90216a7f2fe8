#!/usr/bin/env python3
"""PyTorch's numbers for a torchvision model, to set beside parplan-run's.

    torch_reference.py train ARCH DIR   the model exported for training, its
                                        batches and PyTorch's steps
    torch_reference.py serve ARCH DIR   the model exported for inference, its
                                        batches and PyTorch's outputs

ARCH is a torchvision classifier (resnet18, mobilenet_v2) built with 10
classes and its dropout set to 0, seeded, on batches of 8 images of 32x32.

`train` writes DIR/ARCH.onnx (exported with its batch norms in training
mode), DIR/batches/{input,labels}.bin for 3 steps (parplan-run --batches),
and PyTorch's figures computed in float64 from the same float32 weights and
batches, as `parplan-run --print-weights` prints them (compare-runs.awk sets
the two side by side): DIR/momentum.log (the losses of 3 steps of SGD with
momentum 0.9 and lr 0.01) and DIR/sgd.log (one step of plain SGD at lr 1e3
and the weights and running statistics after it: at that rate a weight's
sum and sum of squares are its gradient's, so they compare the backward
pass), and, for the log only, DIR/momentum-f32.log (PyTorch's own float32
steps). float64 is the reference because float32 PyTorch is not one: on
mobilenet_v2 at this size its second loss is 2% from float64's (a batch norm
over 8 values at 1x1 amplifies rounding), where parplan's is 1e-4.

`serve` writes DIR/ARCH.onnx (exported for inference: eval mode, batch
norms folded, their running statistics first calibrated on 20 random
batches), DIR/batches/input.bin for 2 steps, and PyTorch's float64 logits as
DIR/expected/step-S/logits.npy (float32), which parplan-compare-outputs sets
beside `parplan-run --outputs`.
"""
import copy
import os
import sys

BATCH, SIZE, CLASSES, STEPS = 8, 32, 10, 3


def build(arch):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, arch)(num_classes=CLASSES)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def batches(directory, steps, labels):
    import torch
    inputs = torch.randn(steps, BATCH, 3, SIZE, SIZE)
    os.makedirs(os.path.join(directory, "batches"), exist_ok=True)
    inputs.numpy().tofile(os.path.join(directory, "batches", "input.bin"))
    if not labels:
        return inputs, None
    targets = torch.randint(0, CLASSES, (steps, BATCH))
    targets.numpy().tofile(os.path.join(directory, "batches", "labels.bin"))
    return inputs, targets


def export(model, example, path, training):
    import torch
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, example, path, training=mode,
                      do_constant_folding=not training, opset_version=13,
                      input_names=["input"], output_names=["logits"])


def run_steps(model, inputs, targets, steps, dtype, lr, momentum):
    import torch
    model = copy.deepcopy(model).to(dtype)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    losses = []
    for step in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(
            model(inputs[step].to(dtype)), targets[step])
        loss.backward()
        optimizer.step()
        losses.append(f"step {step + 1}: loss {loss.item():.6f}")
    return model, losses


def write_lines(path, lines):
    with open(path, "w") as out:
        out.write("\n".join(lines) + "\n")


def train(arch, directory):
    import torch
    model = build(arch)
    model.train()
    inputs, targets = batches(directory, STEPS, labels=True)
    export(model, inputs[0], os.path.join(directory, arch + ".onnx"), True)
    _, losses = run_steps(model, inputs, targets, STEPS, torch.float64, 0.01, 0.9)
    write_lines(os.path.join(directory, "momentum.log"), losses)
    _, losses = run_steps(model, inputs, targets, STEPS, torch.float32, 0.01, 0.9)
    write_lines(os.path.join(directory, "momentum-f32.log"), losses)
    stepped, lines = run_steps(model, inputs, targets, 1, torch.float64, 1e3, 0.0)
    for name, tensor in stepped.state_dict().items():
        if tensor.is_floating_point():
            lines.append(f"weights {name}: {tensor.numel()} elements, sum "
                         f"{tensor.sum().item():.9e}, sum of squares "
                         f"{(tensor * tensor).sum().item():.9e}")
    write_lines(os.path.join(directory, "sgd.log"), lines)


def serve(arch, directory):
    import numpy
    import torch
    model = build(arch)
    # An untrained model's running statistics (mean 0, variance 1) shrink
    # mobilenet_v2's logits to 1e-10: calibrate them on random batches
    # first, as a trained model's would be.
    model.train()
    with torch.no_grad():
        for _ in range(20):
            model(torch.randn(BATCH, 3, SIZE, SIZE))
    model.eval()
    inputs, _ = batches(directory, 2, labels=False)
    export(model, inputs[0], os.path.join(directory, arch + ".onnx"), False)
    reference = copy.deepcopy(model).double()
    with torch.no_grad():
        for step in range(2):
            folder = os.path.join(directory, "expected", f"step-{step + 1}")
            os.makedirs(folder, exist_ok=True)
            logits = reference(inputs[step].double()).float().numpy()
            numpy.save(os.path.join(folder, "logits.npy"), logits)


def main(argv):
    if len(argv) != 4 or argv[1] not in ("train", "serve"):
        sys.exit(__doc__.split("\n\n")[1])
    os.makedirs(argv[3], exist_ok=True)
    (train if argv[1] == "train" else serve)(argv[2], argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
