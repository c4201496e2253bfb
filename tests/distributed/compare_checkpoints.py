#!/usr/bin/python3
"""compare_checkpoints.py A B TOLERANCE: the largest difference between two safetensors checkpoints'
float tensors (parameters and optimiser state), relative to each tensor's largest |value|; exits 1
when the names differ or the difference exceeds TOLERANCE. Reads the format itself (8-byte header
length, JSON header, raw little-endian data), so it needs only NumPy."""
import json, struct, sys
import numpy as np
def load(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == '__metadata__': continue
        dtype = {'F32': np.float32, 'F64': np.float64}.get(t['dtype'])
        if dtype is None: continue
        a, b = t['data_offsets']
        out[name] = np.frombuffer(data[a:b], dtype=dtype).astype(np.float64)
    return out
one, two = load(sys.argv[1]), load(sys.argv[2])
if one.keys() != two.keys():
    sys.exit(f"the checkpoints hold different tensors: {sorted(one.keys() ^ two.keys())[:5]}")
worst = max((np.max(np.abs(one[k] - two[k])) / max(np.max(np.abs(one[k])), 1e-30), k) for k in one)
print(f"{len(one)} tensors, largest relative difference {worst[0]:.3g} ({worst[1]})")
if not worst[0] <= float(sys.argv[3]):
    sys.exit(f"above the tolerance {sys.argv[3]}")
