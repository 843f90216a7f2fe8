#!/usr/bin/env python3
"""The zoo's GPT (docs/zoo.md) in PyTorch: the median training step.

The same model `parplan-zoo gpt` exports (pre-LN GPT-2 blocks, exact GELU,
LayerNorm epsilon 1e-5, the causal mask applied as `where(mask, scores,
-1e4)`, the LM head tied to the token embedding), trained as `parplan compile
--train --optimizer adamw` trains it (cross-entropy over every position in
fp32, AdamW with lr 1e-3 and weight decay 0.01), so that its step can be set
beside `parplan-run --backend cuda`'s on one GPU:

    bench/torch-gpt.py --layers 12 --hidden 768 --heads 12 --seq 1024 \\
        --vocab 50257 --batch 8 --precision bf16 --mode eager

--precision: f32, tf32 (float32 products on TF32 tensor cores) or bf16
(autocast to bfloat16 over fp32 master weights, as parplan's mixed precision
keeps them). --mode: eager (attention written out op by op, as exported),
sdpa (eager with F.scaled_dot_product_attention) or compile (torch.compile
of the eager model). Prints one line, `median_ms=X low_ms=Y high_ms=Z`, over
--steps steps after --warmup steps, each timed with CUDA events around
forward, backward and the optimizer's step. Exits 2 without PyTorch or a GPU.
"""
import argparse
import math
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(2)
if not torch.cuda.is_available():
    sys.exit(2)


class Block(torch.nn.Module):
    def __init__(self, hidden, heads, seq, sdpa):
        super().__init__()
        self.heads = heads
        self.sdpa = sdpa
        self.ln_1 = torch.nn.LayerNorm(hidden, eps=1e-5)
        self.c_attn = torch.nn.Linear(hidden, 3 * hidden)
        self.c_proj = torch.nn.Linear(hidden, hidden)
        self.ln_2 = torch.nn.LayerNorm(hidden, eps=1e-5)
        self.c_fc = torch.nn.Linear(hidden, 4 * hidden)
        self.mlp_proj = torch.nn.Linear(4 * hidden, hidden)
        self.register_buffer(
            "causal_mask",
            torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq),
            persistent=False)

    def attention(self, x):
        b, s, h = x.shape
        d = h // self.heads
        q, k, v = self.c_attn(x).split(h, dim=2)
        q = q.view(b, s, self.heads, d).transpose(1, 2)
        k = k.view(b, s, self.heads, d).transpose(1, 2)
        v = v.view(b, s, self.heads, d).transpose(1, 2)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
            scores = torch.where(self.causal_mask[:, :, :s, :s], scores,
                                 torch.tensor(-1e4, dtype=scores.dtype,
                                              device=scores.device))
            y = torch.softmax(scores, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).reshape(b, s, h))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class Gpt(torch.nn.Module):
    def __init__(self, layers, hidden, heads, seq, vocab, sdpa):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, hidden)
        self.wpe = torch.nn.Embedding(seq, hidden)
        self.h = torch.nn.ModuleList(
            Block(hidden, heads, seq, sdpa) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(hidden, eps=1e-5)
        self.register_buffer("position_ids", torch.arange(seq).view(1, seq),
                             persistent=False)

    def forward(self, input_ids, labels):
        x = self.wte(input_ids) + self.wpe(self.position_ids)
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]),
                               labels.view(-1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in (("layers", 12), ("hidden", 768), ("heads", 12),
                          ("seq", 1024), ("vocab", 50257), ("batch", 8),
                          ("steps", 10), ("warmup", 3)):
        parser.add_argument("--" + name, type=int, default=default)
    parser.add_argument("--precision", choices=("f32", "tf32", "bf16"),
                        default="f32")
    parser.add_argument("--mode", choices=("eager", "sdpa", "compile"),
                        default="eager")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    model = Gpt(args.layers, args.hidden, args.heads, args.seq, args.vocab,
                args.mode == "sdpa").cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3,
                                  weight_decay=0.01)
    input_ids = torch.randint(0, args.vocab, (args.batch, args.seq),
                              device="cuda")
    labels = torch.randint(0, args.vocab, (args.batch, args.seq),
                           device="cuda")
    forward = torch.compile(model) if args.mode == "compile" else model

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16,
                            enabled=args.precision == "bf16"):
            loss = forward(input_ids, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.steps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    if not math.isfinite(loss.item()):
        sys.exit(f"torch-gpt: the loss is {loss.item()}")
    times.sort()
    print(f"median_ms={times[len(times) // 2]:.1f} low_ms={times[0]:.1f} "
          f"high_ms={times[-1]:.1f} loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
