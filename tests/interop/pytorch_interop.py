#!/usr/bin/python3
"""Loads a tapegrad float64 copy-task checkpoint into the same architecture written in PyTorch
(the reference Transformer's modules, the same attribute names, so load_state_dict(strict=True) checks every name
and shape), runs tapegrad's batch, and compares log-probabilities, the loss and every parameter
gradient with tapegrad's (atol 1e-9). Then, as an independent twin of study::patch_slices and
study::attribution_patch: every head's output z of every attention call patched from the clean
batch into its corrupted copy, the metric a logit difference, exactly and by AtP; and every edge
(a head, feed-forward or embedding into an attention module's q, k or v input or the output) by
path patching and by EAP, its connectivity from PyTorch's own graph (atol 1e-9).
Exit 0: all match; 1: a mismatch; 77: PyTorch missing."""
import json
import math
import struct
import sys

try:
    import torch
    from torch import nn
except ImportError:
    print("SKIPPED: python3-torch is not installed (apt-get install python3-torch)")
    sys.exit(77)

DTYPES = {"F64": torch.float64, "F32": torch.float32}


def load_safetensors(path):
    """The whole format: u64 little-endian header length, JSON header, raw little-endian data."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[info["dtype"]])
        tensors[name] = t.reshape(info["shape"]).clone()
    return tensors, metadata


class ScaledDotProductAttention(nn.Module):
    def __init__(self, d_k):
        super().__init__()
        self.d_k = d_k

    def forward(self, q, k, v, mask):
        w = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.d_k)
        w = w.masked_fill(~mask, torch.finfo(w.dtype).min)  # tapegrad: true = may attend
        w = torch.softmax(w, dim=2)
        return torch.matmul(w, v)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, h):
        super().__init__()
        self.h, self.d_k = h, d_model // h
        self.W_k = nn.Parameter(torch.empty(h, d_model, self.d_k, dtype=torch.float64))
        self.W_q = nn.Parameter(torch.empty(h, d_model, self.d_k, dtype=torch.float64))
        self.W_v = nn.Parameter(torch.empty(h, d_model, self.d_k, dtype=torch.float64))
        self.scaled_dot_product_attention = ScaledDotProductAttention(self.d_k)
        self.linear = nn.Linear(h * self.d_k, d_model, dtype=torch.float64)
        # z_hook(z) -> z: the heads' outputs A V, [h * batch, seq_q, d_k] head-major, or None.
        self.z_hook = None

    def forward(self, q, k, v, mask):
        # The annotated encoder-decoder: repeat over heads, then einsum "hijk,hkl->hijl"; each tensor keeps its own
        # length. An input already [h, batch, seq, d_model] gives each head its own (replay's receivers per head).
        def per_head(x):
            return x if x.dim() == 4 else x.repeat(self.h, 1, 1, 1)
        q, k, v = per_head(q), per_head(k), per_head(v)
        b = q.size(1)
        q = torch.einsum("hijk,hkl->hijl", q, self.W_q).reshape(self.h * b, q.size(2), self.d_k)
        k = torch.einsum("hijk,hkl->hijl", k, self.W_k).reshape(self.h * b, k.size(2), self.d_k)
        v = torch.einsum("hijk,hkl->hijl", v, self.W_v).reshape(self.h * b, v.size(2), self.d_k)
        out = self.scaled_dot_product_attention(q, k, v, mask.repeat(self.h, 1, 1))
        if self.z_hook is not None:
            out = self.z_hook(out)
        return self.linear(torch.cat(torch.chunk(out, self.h, dim=0), dim=2))


class FFN(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff, dtype=torch.float64)
        self.linear2 = nn.Linear(d_ff, d_model, dtype=torch.float64)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


class Embedding(nn.Module):
    def __init__(self, vocab, d_model, pad):
        super().__init__()
        self.embedding_layer = nn.Embedding(vocab, d_model, padding_idx=pad, dtype=torch.float64)

    def forward(self, x):
        return self.embedding_layer(x)


def positional_table(max_len, d_model):
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    for pos in range(max_len):
        for i in range(d_model):
            angle = pos / math.pow(10000.0, (i - i % 2) / d_model)
            pe[pos, i] = math.sin(angle) if i % 2 == 0 else math.cos(angle)
    return pe


class EncoderLayer(nn.Module):
    def __init__(self, d_model, d_ff, h, eps):
        super().__init__()
        self.multi_head_attention = MultiHeadAttention(d_model, h)
        self.layer_norm_self_attention = nn.LayerNorm(d_model, eps=eps, dtype=torch.float64)
        self.ffn = FFN(d_model, d_ff)
        self.layer_norm_ffn = nn.LayerNorm(d_model, eps=eps, dtype=torch.float64)

    def forward(self, x, mask):
        x = self.layer_norm_self_attention(self.multi_head_attention(x, x, x, mask) + x)
        return self.layer_norm_ffn(self.ffn(x) + x)


class DecoderLayer(nn.Module):
    def __init__(self, d_model, d_ff, h, eps):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, h)
        self.layer_norm_self_attention = nn.LayerNorm(d_model, eps=eps, dtype=torch.float64)
        self.src_tgt_attention = MultiHeadAttention(d_model, h)
        self.layer_norm_src_tgt_attention = nn.LayerNorm(d_model, eps=eps, dtype=torch.float64)
        self.ffn = FFN(d_model, d_ff)
        self.layer_norm_ffn = nn.LayerNorm(d_model, eps=eps, dtype=torch.float64)

    def forward(self, tgt, src, mask_src_tgt, mask_self):
        tgt = self.layer_norm_self_attention(tgt + self.self_attention(tgt, tgt, tgt, mask_self))
        x = self.layer_norm_src_tgt_attention(tgt + self.src_tgt_attention(tgt, src, src, mask_src_tgt))
        return self.layer_norm_ffn(x + self.ffn(x))


class Stack(nn.Module):
    def __init__(self, vocab, max_len, pad, d_model, layer, n, name):
        super().__init__()
        self.embedding = Embedding(vocab, d_model, pad)
        self.register_buffer("pe", positional_table(max_len, d_model), persistent=False)
        setattr(self, name, nn.ModuleList([layer() for _ in range(n)]))
        self.layers_name = name

    def embed(self, tokens):
        return self.embedding(tokens) + self.pe[: tokens.size(1)]


class Generator(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.proj = nn.Linear(d_model, vocab, dtype=torch.float64)

    def forward(self, x):
        return torch.log_softmax(self.proj(x), dim=-1)


class Transformer(nn.Module):
    def __init__(self, vocab, max_len, pad, d_model, n, d_ff, h, eps=1e-5):
        super().__init__()
        self.encoder = Stack(vocab, max_len, pad, d_model, lambda: EncoderLayer(d_model, d_ff, h, eps), n, "encoder_layers")
        self.decoder = Stack(vocab, max_len, pad, d_model, lambda: DecoderLayer(d_model, d_ff, h, eps), n, "decoder_layers")
        self.generator = Generator(d_model, vocab)

    def forward(self, src, tgt, src_mask, tgt_mask):
        x = self.encoder.embed(src)
        for layer in self.encoder.encoder_layers:
            x = layer(x, src_mask)
        y = self.decoder.embed(tgt)
        for layer in self.decoder.decoder_layers:
            y = layer(y, x, src_mask, tgt_mask)
        return self.generator(y)


def compare_patching(model, expected, cfg, src_mask, causal, compare):
    """Every head's z patched from the clean batch into the corrupted one: the metric exactly, and
    AtP's sum over the head of (z_clean - z_corrupted) * d metric / d z at the corrupted run."""
    pad = cfg["pad"]
    clean = [expected[k].long() for k in ("src", "tgt_in", "tgt_out")]
    corrupted = [expected["corrupted_" + k].long() for k in ("src", "tgt_in", "tgt_out")]
    modules = [(f"encoder.encoder_layers.{i}.multi_head_attention", l.multi_head_attention)
               for i, l in enumerate(model.encoder.encoder_layers)]
    for i, l in enumerate(model.decoder.decoder_layers):
        modules += [(f"decoder.decoder_layers.{i}.self_attention", l.self_attention),
                    (f"decoder.decoder_layers.{i}.src_tgt_attention", l.src_tgt_attention)]

    def metric(batch):
        src, tgt_in, _ = batch
        mask = (src != pad).unsqueeze(1)
        tgt_mask = (tgt_in != pad).unsqueeze(1) & causal
        log_probs = model(src, tgt_in, mask, tgt_mask)
        def mean_at(tokens):
            return log_probs.gather(2, tokens.unsqueeze(2)).mean()
        return mean_at(clean[2]) - mean_at(corrupted[2])

    z_clean = {}
    for name, m in modules:
        m.z_hook = lambda z, name=name: z_clean.__setitem__(name, z.detach()) or z
    with torch.no_grad():
        clean_metric = metric(clean)
    worst = compare("patch.clean_metric", expected["patch.clean_metric"].reshape(()), clean_metric)

    z_corrupted = {}
    def keep(z, name):
        z.retain_grad()
        z_corrupted[name] = z
        return z
    for name, m in modules:
        m.z_hook = lambda z, name=name: keep(z, name)
    corrupted_metric = metric(corrupted)
    corrupted_metric.backward()
    worst = max(worst, compare("patch.corrupted_metric", expected["patch.corrupted_metric"].reshape(()),
                               corrupted_metric.detach()))
    for name, m in modules:
        m.z_hook = None
    batch = clean[0].size(0)
    moved = 0.0  # the largest change of the metric a patch made: the comparison must not be trivial
    for name, m in modules:
        h = m.h
        exact, atp = torch.zeros(h, dtype=torch.float64), torch.zeros(h, dtype=torch.float64)
        for head in range(h):
            rows = slice(head * batch, (head + 1) * batch)
            def patch(z, rows=rows, name=name):
                z = z.clone()
                z[rows] = z_clean[name][rows]
                return z
            m.z_hook = patch
            with torch.no_grad():
                exact[head] = metric(corrupted)
            m.z_hook = None
            z = z_corrupted[name]
            atp[head] = ((z_clean[name][rows] - z.detach()[rows]) * z.grad[rows]).sum()
        moved = max(moved, (exact - corrupted_metric.detach()).abs().max().item())
        worst = max(worst, compare("patch.exact." + name, expected[f"patch.exact.{name}.hook_z"], exact))
        worst = max(worst, compare("patch.atp." + name, expected[f"patch.atp.{name}.hook_z"], atp))
    if moved < 1e-3:
        compare("patches that move the metric", torch.tensor(moved), torch.tensor(1.0))  # records a mismatch
    return worst


def replay(model, batch, pad, causal, outs=None, inputs=None, record=None):
    """The twin's forward written out sublayer by sublayer, under tapegrad's point names: outs[name]
    replaces what a sublayer adds to the stream (or an embedding), inputs[name] one attention input,
    one head's copy of it ("<input>.head<h>"), or the decoder's last residual; record gets every
    such tensor and each module's z (head-major [h * batch, seq, d_k]). Returns the
    log-probabilities."""
    outs, inputs = outs or {}, inputs or {}
    src, tgt_in = batch
    src_mask = (src != pad).unsqueeze(1)
    tgt_mask = (tgt_in != pad).unsqueeze(1) & causal

    def point(name, value, replacements):
        if record is not None:
            record[name] = value
        return replacements.get(name, value)

    def attend(module, m, q, k, v, mask):
        # A clone per input, as tapegrad's points are: one tensor feeding q, k and v (and the
        # stream) would otherwise gather all their gradients.
        q, k, v = (point(f"{module}.hook_{c}_input", t.clone(), inputs) for c, t in zip("qkv", (q, k, v)))
        # And a clone per head, as each head's projection reads its input.
        q, k, v = (torch.stack([point(f"{module}.hook_{c}_input.head{j}", t.clone(), inputs) for j in range(m.h)])
                   for c, t in zip("qkv", (q, k, v)))
        def keep(z):
            if record is not None:
                record[module + ".z"] = z
            return z
        m.z_hook = keep
        try:
            return m(q, k, v, mask)
        finally:
            m.z_hook = None

    x = point("encoder.encoder_layers.0.hook_resid_pre", model.encoder.embed(src), outs)
    for i, l in enumerate(model.encoder.encoder_layers):
        p = f"encoder.encoder_layers.{i}"
        a = point(p + ".hook_self_attention_out", attend(p + ".multi_head_attention", l.multi_head_attention, x, x, x, src_mask), outs)
        x = l.layer_norm_self_attention(a + x)
        x = l.layer_norm_ffn(point(p + ".hook_ffn_out", l.ffn(x), outs) + x)
    y = point("decoder.decoder_layers.0.hook_resid_pre", model.decoder.embed(tgt_in), outs)
    for i, l in enumerate(model.decoder.decoder_layers):
        p = f"decoder.decoder_layers.{i}"
        y = l.layer_norm_self_attention(y + point(p + ".hook_self_attention_out",
                                                   attend(p + ".self_attention", l.self_attention, y, y, y, tgt_mask), outs))
        y = l.layer_norm_src_tgt_attention(y + point(p + ".hook_src_tgt_attention_out",
                                                     attend(p + ".src_tgt_attention", l.src_tgt_attention, y, x, x, src_mask), outs))
        y = l.layer_norm_ffn(y + point(p + ".hook_ffn_out", l.ffn(y), outs))
        last = p
    return model.generator(point(last + ".hook_resid_after_ffn", y, inputs))


def compare_edges(model, expected, key, edges, cfg, causal, compare):
    """Every edge tapegrad listed, path-patched and estimated by EAP here: the receiver's input
    recomputed with every sender's output frozen at the corrupted run's but this sender's (the clean
    run's, or for one head the clean run's share of that head: its z through its slice of the output
    projection), then the corrupted run with only that receiver's input replaced; EAP as the patch
    dotted with the vector-Jacobian product of the frozen graph, whose unused inputs
    (torch.autograd.grad's allow_unused) say which edges exist."""
    pad = cfg["pad"]
    clean = tuple(expected[k].long() for k in ("src", "tgt_in"))
    corrupted = tuple(expected["corrupted_" + k].long() for k in ("src", "tgt_in"))
    clean_out, corrupted_out = expected["tgt_out"].long(), expected["corrupted_tgt_out"].long()

    def metric(log_probs):
        return log_probs.gather(2, clean_out.unsqueeze(2)).mean() - log_probs.gather(2, corrupted_out.unsqueeze(2)).mean()

    at_clean, at_corrupted = {}, {}
    with torch.no_grad():
        replay(model, clean, pad, causal, record=at_clean)
    corrupted_metric = metric(replay(model, corrupted, pad, causal, record=at_corrupted))
    receivers = sorted({e.split("|")[1] for e in edges})
    for r in receivers:
        at_corrupted[r].retain_grad()
    corrupted_metric.backward()
    gradients = {r: at_corrupted[r].grad.detach() for r in receivers}
    outs = sorted({e.split("|")[0].split("@")[0] for e in edges})
    frozen = {o: at_corrupted[o].detach() for o in outs}
    batch = clean[0].size(0)

    def attention_of(out):  # "decoder.decoder_layers.1.hook_src_tgt_attention_out" -> its module's name
        layer, name = out.rsplit(".", 1)
        return layer + "." + ("multi_head_attention" if layer.startswith("encoder.") else name[len("hook_"):-len("_out")])

    def patch_of(sender):
        out, _, head = sender.partition("@")
        if not head:
            return at_clean[out].detach() - frozen[out]
        module = attention_of(out)
        m, h = model.get_submodule(module), int(head)
        rows, columns = slice(h * batch, (h + 1) * batch), slice(h * m.d_k, (h + 1) * m.d_k)
        return ((at_clean[module + ".z"][rows] - at_corrupted[module + ".z"][rows]) @ m.linear.weight[:, columns].T).detach()

    # The frozen graph: zero leaves added to every out at the corrupted run's values.
    zeros = {o: torch.zeros_like(frozen[o], requires_grad=True) for o in outs}
    received = {}
    replay(model, corrupted, pad, causal, outs={o: frozen[o] + zeros[o] for o in outs}, record=received)
    pulled = {}
    for r in receivers:
        grads = torch.autograd.grad((received[r] * gradients[r]).sum(), [zeros[o] for o in outs], retain_graph=True,
                                    allow_unused=True)
        pulled[r] = dict(zip(outs, grads))
    connected = {f"{o}|{r}" for r in receivers for o in outs if pulled[r][o] is not None}
    listed = {e.split("@")[0].split("|")[0] + "|" + e.split("|")[1] for e in edges}
    if listed != connected:
        compare("edges listed against PyTorch's graph", torch.tensor(0.0), torch.tensor(1.0))

    exact, eap = torch.zeros(len(edges), dtype=torch.float64), torch.zeros(len(edges), dtype=torch.float64)
    with torch.no_grad():
        for i, e in enumerate(edges):
            sender, receiver = e.split("|")
            out = sender.split("@")[0]
            patch = patch_of(sender)
            moved = {}
            replay(model, corrupted, pad, causal, outs={**frozen, out: frozen[out] + patch}, record=moved)
            exact[i] = metric(replay(model, corrupted, pad, causal, inputs={receiver: moved[receiver]})) - corrupted_metric
            eap[i] = (patch * pulled[receiver][out]).sum()
    worst = compare(key + ".exact", expected[key + ".exact"], exact)
    worst = max(worst, compare(key + ".eap", expected[key + ".eap"], eap))
    if exact.abs().max().item() < 1e-3:
        compare("edge patches that move the metric", torch.tensor(0.0), torch.tensor(1.0))  # records a mismatch
    return worst, len(edges)


def main(directory):
    params, _ = load_safetensors(f"{directory}/model.safetensors")
    expected, meta = load_safetensors(f"{directory}/expected.safetensors")
    edges = {key: meta.pop(key).split(";") for key in ("edges", "edges_per_head")}
    cfg = {k: int(v) for k, v in meta.items()}
    model = Transformer(cfg["vocab"], cfg["max_len"], cfg["pad"], cfg["d_model"], cfg["layers"], cfg["d_ff"], cfg["heads"])
    model.load_state_dict(params, strict=True)  # every name and shape must match

    src, tgt_in, tgt_out = (expected[k].long() for k in ("src", "tgt_in", "tgt_out"))
    pad = cfg["pad"]
    src_mask = (src != pad).unsqueeze(1)                                   # [B, 1, S]
    causal = torch.tril(torch.ones(tgt_in.size(1), tgt_in.size(1), dtype=torch.bool))
    tgt_mask = (tgt_in != pad).unsqueeze(1) & causal                         # [B, St, St]
    log_probs = model(src, tgt_in, src_mask, tgt_mask)
    loss = nn.functional.cross_entropy(log_probs.reshape(-1, cfg["vocab"]), tgt_out.reshape(-1), ignore_index=pad)
    loss.backward()

    failures = []
    def compare(name, ours, theirs):
        diff = (ours - theirs).abs().max().item() if ours.numel() else 0.0
        status = "ok" if diff <= 1e-9 else "MISMATCH"
        if status != "ok":
            failures.append(name)
        return diff
    worst = {"log_probs": compare("log_probs", expected["log_probs"], log_probs.detach()),
             "loss": compare("loss", expected["loss"].reshape(()), loss.detach())}
    grad_worst = 0.0
    for name, p in model.named_parameters():
        grad_worst = max(grad_worst, compare("grad." + name, expected["grad." + name], p.grad))
    patch_worst = compare_patching(model, expected, cfg, src_mask, causal, compare)
    edge_worst, edge_count = compare_edges(model, expected, "edges", edges["edges"], cfg, causal, compare)
    head_worst, head_count = compare_edges(model, expected, "edges_per_head", edges["edges_per_head"], cfg, causal, compare)
    print(f"PyTorch {torch.__version__}: {len(params)} parameters loaded strictly; loss {loss.item():.12f}")
    print(f"max |difference|: log_probs {worst['log_probs']:.3g}, loss {worst['loss']:.3g}, "
          f"parameter gradients {grad_worst:.3g}, patched metrics and AtP of every head {patch_worst:.3g}, "
          f"path patching and EAP of {edge_count} edges {edge_worst:.3g}, "
          f"of {head_count} edges into receivers per head {head_worst:.3g} (tolerance 1e-9)")
    if failures:
        print("MISMATCH in: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
