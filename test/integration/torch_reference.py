#!/usr/bin/env python3
"""PyTorch's numbers for a torchvision model, to set beside parplan-run's.

    torch_reference.py train ARCH DIR   the model exported for training, its
                                        batches and PyTorch's steps
    torch_reference.py serve ARCH DIR   the model exported for inference, its
                                        batches and PyTorch's outputs
    torch_reference.py zoo KIND MODEL.onnx MODEL.mlir HEADS DIR
                                        PyTorch's outputs of a parplan-zoo model

ARCH is a torchvision classifier (resnet18, mobilenet_v2) built with 10
classes and its dropout set to 0, or a recurrent one (lstm: 2 LSTM layers;
gru: a bidirectional GRU) reading each image's 32 rows as a sequence;
seeded, on batches of 8 images of 32x32.

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

`zoo` computes a `parplan-zoo` export (KIND gpt, bert with its pooler,
vit_b_16 or resnet50; HEADS attention heads) in PyTorch, in float64, from
its own weights: each `nn.param` of MODEL.mlir (`parplan import`) is read
from MODEL.onnx at the byte range its `source` names. The transformers are
written out with torch.nn.functional as docs/zoo.md describes them (weights
[in, out], LayerNorm epsilon 1e-5, exact GELU, GPT's causal mask as -1e4);
ResNet-50 is torchvision's, whose names the zoo's match. It writes 2 steps
of batches (token ids, token types 0 or 1, or images) to DIR/batches and
the outputs to DIR/expected/step-S/NAME.npy.
"""
import copy
import os
import re
import sys

import numpy
import torch
import torch.nn.functional as F
import torchvision

BATCH, SIZE, CLASSES, STEPS = 8, 32, 10, 3
# The batches a served model runs: parplan-run --steps 2.
SERVED_STEPS = 2


class RecurrentClassifier(torch.nn.Module):
    """Images read row by row: SIZE steps of 3 * SIZE features through a
    2-layer LSTM (`lstm`) or a bidirectional GRU (`gru`) of 32, the last
    step's output to CLASSES logits."""

    def __init__(self, kind):
        super().__init__()
        features, hidden = 3 * SIZE, 32
        if kind == "lstm":
            self.rnn = torch.nn.LSTM(features, hidden, num_layers=2,
                                     batch_first=True)
        else:
            self.rnn = torch.nn.GRU(features, hidden, batch_first=True,
                                    bidirectional=True)
            hidden *= 2
        self.head = torch.nn.Linear(hidden, CLASSES)

    def forward(self, images):
        rows = images.permute(0, 2, 1, 3).reshape(images.shape[0], SIZE,
                                                  3 * SIZE)
        outputs, _ = self.rnn(rows)
        return self.head(outputs[:, -1])


def build(arch):
    torch.manual_seed(0)
    if arch in ("lstm", "gru"):
        return RecurrentClassifier(arch)
    model = getattr(torchvision.models, arch)(num_classes=CLASSES)
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def batches(directory, steps, labels):
    inputs = torch.randn(steps, BATCH, 3, SIZE, SIZE)
    os.makedirs(os.path.join(directory, "batches"), exist_ok=True)
    inputs.numpy().tofile(os.path.join(directory, "batches", "input.bin"))
    if not labels:
        return inputs, None
    targets = torch.randint(0, CLASSES, (steps, BATCH))
    targets.numpy().tofile(os.path.join(directory, "batches", "labels.bin"))
    return inputs, targets


def export(model, example, path, training):
    mode = torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, example, path, training=mode,
                      do_constant_folding=not training, opset_version=13,
                      input_names=["input"], output_names=["logits"])


def run_steps(model, inputs, targets, steps, dtype, lr, momentum):
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
    model = build(arch)
    # An untrained model's running statistics (mean 0, variance 1) shrink
    # mobilenet_v2's logits to 1e-10: calibrate them on random batches
    # first, as a trained model's would be.
    model.train()
    with torch.no_grad():
        for _ in range(20):
            model(torch.randn(BATCH, 3, SIZE, SIZE))
    model.eval()
    inputs, _ = batches(directory, SERVED_STEPS, labels=False)
    export(model, inputs[0], os.path.join(directory, arch + ".onnx"), False)
    reference = copy.deepcopy(model).double()
    with torch.no_grad():
        for step in range(SERVED_STEPS):
            folder = os.path.join(directory, "expected", f"step-{step + 1}")
            os.makedirs(folder, exist_ok=True)
            logits = reference(inputs[step].double()).float().numpy()
            numpy.save(os.path.join(folder, "logits.npy"), logits)


def read_params(onnx_path, mlir_path):
    """The float32 parameters of a model, by name, from its file."""
    pattern = re.compile(r'nn\.param "([^"]+)" \{source = "initializer@(\d+)\+(\d+)"\}'
                         r' : tensor<([0-9x]*)xf32>')
    with open(onnx_path, "rb") as model:
        data = model.read()
    params = {}
    with open(mlir_path) as mlir:
        for match in pattern.finditer(mlir.read()):
            name, offset, length, dims = match.groups()
            shape = [int(d) for d in dims.split("x")] if dims else []
            raw = bytearray(data[int(offset):int(offset) + int(length)])
            params[name] = torch.frombuffer(raw, dtype=torch.float32).reshape(shape).double()
    return params


def layer_norm(x, params, prefix):
    return F.layer_norm(x, x.shape[-1:], params[prefix + ".weight"],
                        params[prefix + ".bias"], 1e-5)


def attention(q, k, v, heads, causal):
    b, s, h = q.shape
    split = [t.reshape(b, s, heads, h // heads).transpose(1, 2) for t in (q, k, v)]
    scores = split[0] @ split[1].transpose(2, 3) / (h // heads) ** 0.5
    if causal:
        mask = torch.tril(torch.ones(s, s, dtype=torch.bool))
        scores = torch.where(mask, scores, torch.tensor(-1e4, dtype=scores.dtype))
    context = torch.softmax(scores, dim=-1) @ split[2]
    return context.transpose(1, 2).reshape(b, s, h)


def linear(x, params, prefix):
    """x @ W + b with W stored [in, out], as the zoo's MatMul + Add."""
    return x @ params[prefix + ".weight"] + params[prefix + ".bias"]


def layer_count(params, pattern):
    return len({m.group(1) for n in params for m in [re.match(pattern, n)] if m})


def zoo_gpt(params, heads, ids):
    s = ids.shape[1]
    x = params["transformer.wte.weight"][ids] + params["transformer.wpe.weight"][:s]
    for i in range(layer_count(params, r"transformer\.h\.(\d+)\.")):
        p = f"transformer.h.{i}."
        q, k, v = linear(layer_norm(x, params, p + "ln_1"), params,
                         p + "attn.c_attn").chunk(3, dim=-1)
        x = x + linear(attention(q, k, v, heads, True), params, p + "attn.c_proj")
        hidden = F.gelu(linear(layer_norm(x, params, p + "ln_2"), params, p + "mlp.c_fc"))
        x = x + linear(hidden, params, p + "mlp.c_proj")
    x = layer_norm(x, params, "transformer.ln_f")
    return {"logits": x @ params["transformer.wte.weight"].T}


def zoo_bert(params, heads, ids, types):
    s = ids.shape[1]
    x = (params["embeddings.word_embeddings.weight"][ids] +
         params["embeddings.token_type_embeddings.weight"][types] +
         params["embeddings.position_embeddings.weight"][:s])
    x = layer_norm(x, params, "embeddings.LayerNorm")
    for i in range(layer_count(params, r"encoder\.layer\.(\d+)\.")):
        p = f"encoder.layer.{i}."
        q, k, v = (linear(x, params, p + "attention.self." + n)
                   for n in ("query", "key", "value"))
        context = attention(q, k, v, heads, False)
        x = layer_norm(linear(context, params, p + "attention.output.dense") + x,
                       params, p + "attention.output.LayerNorm")
        hidden = F.gelu(linear(x, params, p + "intermediate.dense"))
        x = layer_norm(linear(hidden, params, p + "output.dense") + x,
                       params, p + "output.LayerNorm")
    pooled = torch.tanh(x[:, 0] @ params["pooler.dense.weight"].T +
                        params["pooler.dense.bias"])
    return {"last_hidden_state": x, "pooler_output": pooled}


def zoo_vit(params, heads, images):
    patches = F.conv2d(images, params["conv_proj.weight"], params["conv_proj.bias"],
                       stride=params["conv_proj.weight"].shape[-1])
    x = patches.flatten(2).transpose(1, 2)
    token = params["class_token"].expand(x.shape[0], -1, -1)
    x = torch.cat([token, x], dim=1) + params["encoder.pos_embedding"]
    for i in range(layer_count(params, r"encoder\.layers\.encoder_layer_(\d+)\.")):
        p = f"encoder.layers.encoder_layer_{i}."
        q, k, v = linear(layer_norm(x, params, p + "ln_1"), params,
                         p + "self_attention.in_proj").chunk(3, dim=-1)
        x = x + linear(attention(q, k, v, heads, False), params,
                       p + "self_attention.out_proj")
        hidden = F.gelu(linear(layer_norm(x, params, p + "ln_2"), params, p + "mlp.0"))
        x = x + linear(hidden, params, p + "mlp.3")
    x = layer_norm(x, params, "encoder.ln")[:, 0]
    return {"output": x @ params["heads.head.weight"].T + params["heads.head.bias"]}


def zoo_resnet50(params, images):
    model = torchvision.models.resnet50(num_classes=params["fc.bias"].numel()).double()
    missing, unexpected = model.load_state_dict(params, strict=False)
    if unexpected or any(not n.endswith("num_batches_tracked") for n in missing):
        sys.exit(f"resnet50: weights missing {missing[:3]}, unexpected {unexpected[:3]}")
    model.eval()
    return {"output": model(images)}


def zoo(kind, onnx_path, mlir_path, heads, directory):
    params = read_params(onnx_path, mlir_path)
    torch.manual_seed(0)
    batch = 2
    shape = (SERVED_STEPS, batch)
    inputs = {}
    if kind in ("gpt", "bert"):
        table = "transformer.wte.weight" if kind == "gpt" else "embeddings.word_embeddings.weight"
        seq = (params["transformer.wpe.weight"] if kind == "gpt" else
               params["embeddings.position_embeddings.weight"]).shape[0]
        inputs["input_ids"] = torch.randint(0, params[table].shape[0], shape + (seq,))
        if kind == "bert":
            inputs["token_type_ids"] = torch.randint(0, 2, shape + (seq,))
    else:
        inputs["input"] = torch.randn(*shape, 3, 224, 224)
    os.makedirs(os.path.join(directory, "batches"), exist_ok=True)
    for name, value in inputs.items():
        value.numpy().tofile(os.path.join(directory, "batches", name + ".bin"))
    for step in range(SERVED_STEPS):
        given = [inputs[n][step] for n in inputs]
        given = [g.double() if g.is_floating_point() else g for g in given]
        with torch.no_grad():
            if kind == "gpt":
                outputs = zoo_gpt(params, heads, *given)
            elif kind == "bert":
                outputs = zoo_bert(params, heads, *given)
            elif kind == "vit_b_16":
                outputs = zoo_vit(params, heads, *given)
            else:
                outputs = zoo_resnet50(params, *given)
        folder = os.path.join(directory, "expected", f"step-{step + 1}")
        os.makedirs(folder, exist_ok=True)
        for name, value in outputs.items():
            numpy.save(os.path.join(folder, name + ".npy"), value.float().numpy())


def main(argv):
    if len(argv) == 7 and argv[1] == "zoo":
        os.makedirs(argv[6], exist_ok=True)
        zoo(argv[2], argv[3], argv[4], int(argv[5]), argv[6])
        return 0
    if len(argv) != 4 or argv[1] not in ("train", "serve"):
        sys.exit(__doc__.split("\n\n")[1])
    os.makedirs(argv[3], exist_ok=True)
    (train if argv[1] == "train" else serve)(argv[2], argv[3])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
