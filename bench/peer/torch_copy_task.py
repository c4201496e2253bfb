#!/usr/bin/python3
"""The copy task of The Annotated Transformer trained in PyTorch until greedy decoding copies 100
fresh sequences: the peer of `copy_task --stop-at-accuracy 1` for bench/run_time_to_copy.

    torch_copy_task.py --threads N [--seed S] [--d-model 64] [--d-ff 256] [--heads 4] [--batch 80]
                       [--epochs 60]

The model, loss and optimiser are torch_bench.py's (the copy_task program's): N = 2, seq 10,
vocab 11, dropout 0, Adam(lr 1, betas (0.9, 0.98), eps 1e-9) under Noam(factor 0.5, warm-up 200),
20 batches an epoch of fresh random sequences. After every epoch (not timed) it decodes 100 fresh
sequences greedily and stops at 100% exact matches. Prints one JSON line: the training seconds,
the steps and the final accuracy.
"""
import argparse
import json
import time

import torch
import torch.nn.functional as F

from torch_bench import PAD, SEQ, START, VOCAB, Transformer

BATCHES_PER_EPOCH, WARMUP, FACTOR = 20, 200, 0.5


def random_sequences(batch, gen):
    data = torch.randint(2, VOCAB, (batch, SEQ), generator=gen)
    data[:, 0] = START
    return data


def causal(n):
    return torch.tril(torch.ones(n, n, dtype=torch.bool)).unsqueeze(0)


@torch.no_grad()
def exact_match_accuracy(model, gen, n=100):
    model.eval()
    src = random_sequences(n, gen)
    src_mask = (src != PAD).unsqueeze(-2)
    ys = torch.full((n, 1), START, dtype=torch.long)
    for _ in range(1, SEQ):
        log_probs = model(src, ys, src_mask, (ys != PAD).unsqueeze(-2) & causal(ys.size(1)))
        ys = torch.cat([ys, log_probs[:, -1].argmax(-1, keepdim=True)], dim=1)
    model.train()
    return (ys == src).all(dim=1).float().mean().item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--d-ff", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--batch", type=int, default=80)
    parser.add_argument("--epochs", type=int, default=60)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = Transformer(VOCAB, SEQ, args.d_model, 2, args.d_ff, args.heads)
    opt = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: FACTOR * args.d_model**-0.5 * min((s + 1) ** -0.5, (s + 1) * WARMUP**-1.5))
    gen = torch.Generator().manual_seed(args.seed + 1)
    tgt_mask = causal(SEQ - 1)
    seconds, steps, accuracy = 0.0, 0, 0.0
    for _ in range(args.epochs):
        start = time.perf_counter()
        for _ in range(BATCHES_PER_EPOCH):
            data = random_sequences(args.batch, gen)
            src, tgt_in, tgt_out = data, data[:, :-1], data[:, 1:]
            log_probs = model(src, tgt_in, (src != PAD).unsqueeze(-2), (tgt_in != PAD).unsqueeze(-2) & tgt_mask)
            loss = F.cross_entropy(log_probs.reshape(-1, VOCAB), tgt_out.reshape(-1), ignore_index=PAD)
            loss.item()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            sched.step()
            steps += 1
        seconds += time.perf_counter() - start
        accuracy = exact_match_accuracy(model, gen)
        if accuracy >= 1.0:
            break
    print(json.dumps({"program": "PyTorch", "threads": args.threads, "seed": args.seed, "seconds": seconds,
                      "steps": steps, "accuracy": accuracy}))


if __name__ == "__main__":
    main()
