"""Writes a tiny random llama2.c checkpoint (model.bin, tokenizer.bin) for the
server's end-to-end test: dim 32, 2 layers, 4 heads over 2 k/v heads, an
unshared classifier, context 96, and a sentencepiece-style vocabulary:
<unk> <s> </s>, the 256 <0xHH> byte pieces, printable ASCII, a few merges,
non-ASCII pieces and runs of spaces. Standard library only. Usage: make_tiny_llama2.py OUTDIR"""
import os
import random
import struct
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(7)
pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
pieces += [chr(c) for c in range(32, 127)]
pieces += [" t", "th", "he", " the", "in", "an", " a", "er", "on", " s", "é", "ü", "日", "本", " café", "🙂"]
pieces += [" " * 2, " " * 4, " " * 8, " " * 16]   # runs of spaces merge 16:1 (long prompts, few tokens)
scores = [0.0] * 259 + [-float(i) for i in range(len(pieces) - 259)]
V = len(pieces)
dim, hidden, layers, heads, kv_heads, seq = 32, 64, 2, 4, 2, 96
kv_dim = dim // heads * kv_heads
head = dim // heads


def floats(n, scale, offset=0.0):
    return struct.pack("<%df" % n, *[offset + scale * (2 * rng.random() - 1) for _ in range(n)])


with open(os.path.join(out, "model.bin"), "wb") as f:
    f.write(struct.pack("<7i", dim, hidden, layers, heads, kv_heads, -V, seq))
    f.write(floats(V * dim, 1.0))                 # token embedding
    f.write(floats(layers * dim, 0.1, 1.0))       # rms_att
    f.write(floats(layers * dim * dim, 0.3))      # wq
    f.write(floats(layers * kv_dim * dim, 0.3))   # wk
    f.write(floats(layers * kv_dim * dim, 0.3))   # wv
    f.write(floats(layers * dim * dim, 0.3))      # wo
    f.write(floats(layers * dim, 0.1, 1.0))       # rms_ffn
    f.write(floats(layers * hidden * dim, 0.3))   # w1
    f.write(floats(layers * dim * hidden, 0.3))   # w2
    f.write(floats(layers * hidden * dim, 0.3))   # w3
    f.write(floats(dim, 0.1, 1.0))                # rms_final
    f.write(floats(seq * head, 0.0))              # legacy RoPE tables (unused)
    f.write(floats(V * dim, 1.5))                 # classifier
with open(os.path.join(out, "tokenizer.bin"), "wb") as f:
    f.write(struct.pack("<i", max(len(p.encode()) for p in pieces)))
    for p, s in zip(pieces, scores):
        b = p.encode()
        f.write(struct.pack("<fi", s, len(b)) + b)
print("wrote %s/model.bin and tokenizer.bin (vocab %d)" % (out, V))
