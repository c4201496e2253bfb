#!/usr/bin/python3
"""PyTorch peer of tapegrad_bench: the same workloads, shapes, dtype (float32) and thread count.

    torch_bench.py --threads N [--repetitions R] [--warmup S] [--min-time S] [--filter REGEX] [--json OUT]
    torch_bench.py --threads N --rss tiny|paper [--rss-steps S]

Workload names match bench/*.cpp (run_side_by_side pairs rows by name). Each workload is timed
like Google Benchmark times it: untimed calls for --warmup seconds (at least one), then enough
iterations to fill --min-time,
repeated --repetitions times; the JSON holds every repetition's per-iteration wall-clock and
process CPU seconds and their medians. forward+backward workloads record the forward, call
backward with a fixed random seed gradient, then set the inputs' .grad to None, as
tapegrad_bench's harness drops its inputs' gradients; "fwd" workloads run under no_grad.

The training step mirrors tapegrad's nn/transformer model (the reference Transformer, post-LN): token embeddings
N(0,1) with padding_idx 0, sinusoidal positional encoding added unscaled, N encoder and decoder
layers whose attention keeps per-head W_q, W_k, W_v [h, d_model, d_k] (projected with
einsum("ijk,hkl->hijl")), scaled dot-product attention over [h*batch, seq, d_k] with masked
scores set to the lowest float, heads re-joined with chunk + cat and an output Linear; ReLU FFN;
generator Linear + log_softmax; cross_entropy(ignore_index=0) of the log-probabilities; Adam(lr 1,
betas (0.9, 0.98), eps 1e-9) under the Noam schedule (warm-up 200); zero_grad(set_to_none=True).
"""
import argparse
import json
import math
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, SEQ, PAD, START = 11, 10, 0, 1
SIZES = {  # as tapegrad::bench::copy_task_config
    "tiny": dict(d_model=64, d_ff=256, heads=4, batch=32),
    "paper": dict(d_model=512, d_ff=2048, heads=8, batch=80),
}


def randn(*shape, requires_grad=True, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=gen).requires_grad_(requires_grad)


def random_mask(*shape):
    """True (fill) with probability 0.3."""
    gen = torch.Generator().manual_seed(7)
    return torch.randint(0, 10, shape, generator=gen) < 3


# ---------------------------------------------------------------- the copy-task model


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, h):
        super().__init__()
        self.h, self.d_k = h, d_model // h
        bound = math.sqrt(6.0 / (d_model + self.d_k))
        for name in ("W_k", "W_q", "W_v"):
            setattr(self, name, nn.Parameter(torch.empty(h, d_model, self.d_k).uniform_(-bound, bound)))
        self.linear = nn.Linear(h * self.d_k, d_model)

    def forward(self, q, k, v, mask_3d=None):
        batch = q.size(0)

        def project(x, w):  # [batch, seq, d_model] -> [h*batch, seq, d_k], head-major
            return torch.einsum("ijk,hkl->hijl", x, w).reshape(self.h * batch, x.size(1), self.d_k)

        q, k, v = project(q, self.W_q), project(k, self.W_k), project(v, self.W_v)
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.d_k)
        if mask_3d is not None:  # true = may attend
            scores = scores.masked_fill(~mask_3d.repeat(self.h, 1, 1), torch.finfo(scores.dtype).min)
        out = torch.matmul(torch.softmax(scores, dim=2), v)
        return self.linear(torch.cat(torch.chunk(out, self.h, dim=0), dim=2))


class FFN(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, d_ff, h, dropout, eps):
        super().__init__()
        self.attn, self.ffn = MultiHeadAttention(d_model, h), FFN(d_model, d_ff)
        self.drop1, self.drop2 = nn.Dropout(dropout), nn.Dropout(dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model, eps=eps), nn.LayerNorm(d_model, eps=eps)

    def forward(self, x, mask):
        x = self.norm1(x + self.drop1(self.attn(x, x, x, mask)))
        return self.norm2(x + self.drop2(self.ffn(x)))


class DecoderLayer(nn.Module):
    def __init__(self, d_model, d_ff, h, dropout, eps):
        super().__init__()
        self.self_attn, self.src_attn = MultiHeadAttention(d_model, h), MultiHeadAttention(d_model, h)
        self.ffn = FFN(d_model, d_ff)
        self.drops = nn.ModuleList(nn.Dropout(dropout) for _ in range(3))
        self.norms = nn.ModuleList(nn.LayerNorm(d_model, eps=eps) for _ in range(3))

    def forward(self, x, memory, src_mask, tgt_mask):
        x = self.norms[0](x + self.drops[0](self.self_attn(x, x, x, tgt_mask)))
        x = self.norms[1](x + self.drops[1](self.src_attn(x, memory, memory, src_mask)))
        return self.norms[2](x + self.drops[2](self.ffn(x)))


def sinusoidal_table(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(d_model)
    angle = pos / torch.pow(10000.0, (i - i % 2).double() / d_model)
    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).float()


class Transformer(nn.Module):
    def __init__(self, vocab, max_len, d_model, n, d_ff, h, dropout=0.0, eps=1e-5):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(vocab, d_model, padding_idx=PAD)
        self.register_buffer("pe", sinusoidal_table(max_len, d_model))
        self.encoder = nn.ModuleList(EncoderLayer(d_model, d_ff, h, dropout, eps) for _ in range(n))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, d_ff, h, dropout, eps) for _ in range(n))
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, src, tgt, src_mask, tgt_mask):
        x = self.src_embed(src) + self.pe[: src.size(1)]
        for layer in self.encoder:
            x = layer(x, src_mask)
        y = self.tgt_embed(tgt) + self.pe[: tgt.size(1)]
        for layer in self.decoder:
            y = layer(y, x, src_mask, tgt_mask)
        return torch.log_softmax(self.proj(y), dim=-1)


class Trainer:
    """One copy-task training step per call, as tapegrad's copy_task::Trainer::run_epoch with one batch."""

    def __init__(self, size, seed=1, bf16=False):
        cfg = SIZES[size]
        self.bf16 = bf16  # CPU autocast: the products in bf16, as tapegrad's train_step/SIZE_bf16
        torch.manual_seed(seed)
        self.batch = cfg["batch"]
        self.model = Transformer(VOCAB, SEQ, cfg["d_model"], 2, cfg["d_ff"], cfg["heads"])
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
        d_model, warmup = cfg["d_model"], 200
        self.sched = torch.optim.lr_scheduler.LambdaLR(
            self.opt, lambda s: d_model**-0.5 * min((s + 1) ** -0.5, (s + 1) * warmup**-1.5))
        self.gen = torch.Generator().manual_seed(seed + 1)
        causal = torch.tril(torch.ones(SEQ - 1, SEQ - 1, dtype=torch.bool))
        self.causal = causal.unsqueeze(0)

    def step(self):
        self.model.train()
        data = torch.randint(2, VOCAB, (self.batch, SEQ), generator=self.gen)
        data[:, 0] = START
        src, tgt_in, tgt_out = data, data[:, :-1], data[:, 1:]
        src_mask = (src != PAD).unsqueeze(-2)                      # [B, 1, S]
        tgt_mask = (tgt_in != PAD).unsqueeze(-2) & self.causal      # [B, S-1, S-1]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            log_probs = self.model(src, tgt_in, src_mask, tgt_mask)
            loss = F.cross_entropy(log_probs.reshape(-1, VOCAB), tgt_out.reshape(-1), ignore_index=PAD)
        loss.item()
        loss.backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.sched.step()


# ---------------------------------------------------------------- workloads
# Each maker returns (step, flop per step or None, items per step or None).


def forward_backward(inputs, f):
    with torch.no_grad():
        seed = randn(*f().shape, requires_grad=False, seed=99)

    def step():
        f().backward(seed)
        for x in inputs:
            x.grad = None
    return step


def forward_only(f):
    def step():
        with torch.no_grad():
            f()
    return step


PRODUCTS = [  # label, subscripts ("" = matmul), a, b, (batch, m, k, n) as in ops_bench.cpp
    ("ibhd,jbhd->ijbh/s10", "ibhd,jbhd->ijbh", (10, 80, 8, 64), (10, 80, 8, 64), (640, 10, 64, 10)),
    ("ijbh,jbhd->ibhd/s10", "ijbh,jbhd->ibhd", (10, 10, 80, 8), (10, 80, 8, 64), (640, 10, 10, 64)),
    ("ibhd,jbhd->ijbh/s128", "ibhd,jbhd->ijbh", (128, 80, 8, 64), (128, 80, 8, 64), (640, 128, 64, 128)),
    ("ijbh,jbhd->ibhd/s128", "ijbh,jbhd->ibhd", (128, 128, 80, 8), (128, 80, 8, 64), (640, 128, 128, 64)),
    ("hijk,hkl->hijl", "hijk,hkl->hijl", (8, 80, 10, 512), (8, 512, 64), (8, 800, 512, 64)),
    ("ijk,hkl->hijl", "ijk,hkl->hijl", (80, 10, 512), (8, 512, 64), (1, 800, 512, 512)),
    ("bij,bjk->bik", "bij,bjk->bik", (64, 128, 64), (64, 64, 128), (64, 128, 64, 128)),
    ("800x512x2048", "", (800, 512), (512, 2048), (1, 800, 512, 2048)),
]


def product_workloads():
    out = {}
    for label, subs, sa, sb, (batch, m, k, n) in PRODUCTS:
        kind = "einsum/" if subs else "matmul/"
        flop = 2.0 * batch * m * n * k

        def make(fwd_only, subs=subs, sa=sa, sb=sb):
            a, b = randn(*sa, seed=1), randn(*sb, seed=2)
            f = (lambda: torch.einsum(subs, a, b)) if subs else (lambda: torch.matmul(a, b))
            return forward_only(f) if fwd_only else forward_backward([a, b], f)

        out[kind + label + "/fwd"] = (lambda make=make: make(True), flop, None)
        out[kind + label + "/fwd_bwd"] = (lambda make=make: make(False), 3 * flop, None)

        def make_gemm(fwd_only, batch=batch, m=m, k=k, n=n):
            a, b = randn(batch, m, k, requires_grad=False, seed=1), randn(batch, k, n, requires_grad=False, seed=2)
            g = randn(batch, m, n, requires_grad=False, seed=3)
            c, da, db = torch.empty(batch, m, n), torch.empty(batch, m, k), torch.empty(batch, k, n)

            def step():
                torch.bmm(a, b, out=c)
                if not fwd_only:
                    torch.bmm(g, b.transpose(1, 2), out=da)
                    torch.bmm(a.transpose(1, 2), g, out=db)
            return step

        out["gemm/" + label + "/fwd"] = (lambda make_gemm=make_gemm: make_gemm(True), flop, None)
        out["gemm/" + label + "/fwd_bwd"] = (lambda make_gemm=make_gemm: make_gemm(False), 3 * flop, None)
    return out


def row_workloads():
    rows, attention = (4096, 512), (10, 10, 80, 8)
    ops = {
        "softmax/4096x512": (rows, lambda x: torch.softmax(x, -1)),
        "softmax/10x10x80x8": (attention, lambda x: torch.softmax(x, 1)),
        "log_softmax/4096x512": (rows, lambda x: torch.log_softmax(x, -1)),
        "log_softmax/10x10x80x8": (attention, lambda x: torch.log_softmax(x, 1)),
    }
    for shape in (rows, attention):
        w, b = randn(shape[-1], seed=3), randn(shape[-1], seed=4)
        name = "layer_norm/" + "x".join(map(str, shape))
        ops[name] = (shape, lambda x, w=w, b=b: F.layer_norm(x, (x.size(-1),), w, b, 1e-5))
    rows_mask, attention_mask = random_mask(*rows), random_mask(10, 10, 80, 1)
    ops["masked_fill/4096x512"] = (rows, lambda x: x.masked_fill(rows_mask, -math.inf))
    ops["masked_fill/10x10x80x8"] = (attention, lambda x: x.masked_fill(attention_mask, -math.inf))
    ops["dropout/4096x512"] = (rows, lambda x: F.dropout(x, 0.1, True))
    ops["dropout/10x10x80x8"] = (attention, lambda x: F.dropout(x, 0.1, True))
    ops["relu/4096x512"] = (rows, torch.relu)
    ops["relu/800x2048"] = ((800, 2048), torch.relu)

    out = {}
    for name, (shape, op) in ops.items():
        def make(shape=shape, op=op):
            x = randn(*shape, seed=1)
            return forward_backward([x], lambda: op(x))
        out[name] = (make, None, math.prod(shape))
    for n, c in ((800, 11), (4096, 1000)):
        def make(n=n, c=c):
            logits = randn(n, c, seed=1)
            targets = torch.randint(0, c, (n,), generator=torch.Generator().manual_seed(5))
            return forward_backward([logits], lambda: F.cross_entropy(logits, targets))
        out[f"cross_entropy/{n}x{c}"] = (make, None, n * c)

    def chain():  # per-op work alone, as ops_bench.cpp's op_chain row: 16 chained adds over 4 floats
        x, y = randn(4, seed=1), randn(4, seed=2)

        def f():
            t = x
            for _ in range(16):
                t = t + y
            return t
        return forward_backward([x, y], f)
    out["op_chain/add_x16/4"] = (chain, None, 16)
    return out


class LabmlAttention(nn.Module):
    """labml.ai MultiHeadAttention, sequence-first, no dropout."""

    def __init__(self, heads, d_model):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.query, self.key = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.value, self.output = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask):
        split = lambda x: x.view(*x.shape[:-1], self.heads, self.d_k)  # noqa: E731
        q, k, v = split(self.query(query)), split(self.key(key)), split(self.value(value))
        scores = torch.einsum("ibhd,jbhd->ijbh", q, k) / math.sqrt(self.d_k)
        scores = scores.masked_fill(mask.unsqueeze(-1) == 0, -math.inf)
        x = torch.einsum("ijbh,jbhd->ibhd", torch.softmax(scores, dim=1), v)
        return self.output(x.reshape(*x.shape[:2], -1))


def model_workloads():
    def labml():
        torch.manual_seed(1)
        mha = LabmlAttention(8, 512)
        x = randn(10, 80, 512, seed=2)
        causal = torch.tril(torch.ones(10, 10, dtype=torch.bool)).unsqueeze(-1)  # [10, 10, 1]
        return forward_backward(list(mha.parameters()) + [x], lambda: mha(x, x, x, causal))

    def labml_core():
        q, k, v = randn(10, 80, 8, 64, seed=3), randn(10, 80, 8, 64, seed=4), randn(10, 80, 8, 64, seed=5)
        masked_out = ~torch.tril(torch.ones(10, 10, dtype=torch.bool)).view(10, 10, 1, 1)

        def core():
            scores = torch.einsum("ibhd,jbhd->ijbh", q, k) * (1.0 / 8.0)
            attn = torch.softmax(scores.masked_fill(masked_out, -math.inf), dim=1)
            return torch.einsum("ijbh,jbhd->ibhd", attn, v)
        return forward_backward([q, k, v], core)

    def adam():
        torch.manual_seed(1)
        model = Transformer(VOCAB, SEQ, 512, 2, 2048, 8, dropout=0.1)
        for i, p in enumerate(model.parameters()):
            p.grad = randn(*p.shape, requires_grad=False, seed=3 + i)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
        return opt.step

    paper_params = sum(p.numel() for p in Transformer(VOCAB, SEQ, 512, 2, 2048, 8).parameters())
    out = {
        "labml_mha/s10_b80_d512_h8": (labml, None, 10 * 80),
        "labml_attention/s10_b80_h8_d64": (labml_core, None, 10 * 80),
        "adam_step/paper": (adam, None, paper_params),
    }
    for size in SIZES:
        tokens = SIZES[size]["batch"] * (SEQ - 1)
        out["train_step/" + size] = (lambda size=size: Trainer(size).step, None, tokens)
        out["train_step/" + size + "_bf16"] = (lambda size=size: Trainer(size, bf16=True).step, None, tokens)
    return out


def measure(step, warmup, min_time, repetitions):
    """Per-iteration (wall, process CPU) seconds of each repetition, Google Benchmark style: untimed
    calls for at least `warmup` seconds (at least one), the last of them the estimate of an iteration."""
    begin = time.perf_counter()
    while True:
        start = time.perf_counter()
        step()
        last = time.perf_counter() - start
        if start + last - begin >= warmup:
            break
    iterations = max(1, math.ceil(min_time / max(last, 1e-9)))
    runs = []
    for _ in range(repetitions):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(iterations):
            step()
        runs.append(((time.perf_counter() - wall) / iterations, (time.process_time() - cpu) / iterations))
    return iterations, runs


def peak_rss_kib():
    """The peak resident set since start or since reset_peak_rss(): VmHWM, in KiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def reset_peak_rss():
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # resets VmHWM to the current RSS (proc(5))


# As tapegrad_bench --rss: the steady peak is over the steps after the first three.
RSS_WARM_UP_STEPS = 3


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--warmup", type=float, default=0.5, help="untimed seconds before the repetitions")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per repetition")
    parser.add_argument("--filter", default="", help="regex on workload names")
    parser.add_argument("--json", help="write results here (default: stdout)")
    parser.add_argument("--rss", choices=sorted(SIZES), help="peak-RSS mode for the training step of this size")
    parser.add_argument("--rss-steps", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    if args.rss:
        baseline = peak_rss_kib()
        trainer = Trainer(args.rss)
        after_init = peak_rss_kib()
        warm_up_peak, steady_peak = 0, 0
        for i in range(args.rss_steps):
            if i == RSS_WARM_UP_STEPS:
                warm_up_peak = peak_rss_kib()
                reset_peak_rss()
            trainer.step()
        if args.rss_steps > RSS_WARM_UP_STEPS:
            steady_peak = peak_rss_kib()
        print(json.dumps({"workload": "train_step/" + args.rss, "threads": args.threads, "steps": args.rss_steps,
                          "baseline_rss_kib": baseline, "after_init_rss_kib": after_init,
                          "peak_rss_kib": max(warm_up_peak, peak_rss_kib()), "steady_peak_rss_kib": steady_peak}))
        return

    workloads = {**product_workloads(), **row_workloads(), **model_workloads()}
    results = []
    for name, (make, flop, items) in workloads.items():
        if not re.search(args.filter, name):
            continue
        iterations, runs = measure(make(), args.warmup, args.min_time, args.repetitions)
        results.append({
            "name": name, "iterations": iterations, "flop": flop, "items": items,
            "real_time_s": [r[0] for r in runs], "cpu_time_s": [r[1] for r in runs],
            "median_real_time_s": statistics.median(r[0] for r in runs),
            "median_cpu_time_s": statistics.median(r[1] for r in runs),
        })
        print(f"{name:45s} {results[-1]['median_real_time_s'] * 1e6:12.1f} us", file=sys.stderr)
    report = {"context": {"torch": torch.__version__, "threads": torch.get_num_threads()}, "benchmarks": results}
    text = json.dumps(report, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
