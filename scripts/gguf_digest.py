"""sha256 over, in file order, each tensor's name bytes then its data bytes (shared/README)."""
import hashlib, struct, sys

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
          12: (256, 144), 13: (256, 176), 14: (256, 210), 24: (1, 1), 26: (1, 4), 30: (1, 2)}

b = open(sys.argv[1], "rb").read()
o = 8
n_tensors, n_kv = struct.unpack_from("<QQ", b, o); o += 16
def string():
    global o
    n, = struct.unpack_from("<Q", b, o); o += 8
    s = b[o:o + n]; o += n
    return s
def skip(t):
    global o
    if t == 8: string()
    elif t == 9:
        et, n = struct.unpack_from("<iQ", b, o); o += 12
        for _ in range(n): skip(et)
    else: o += SIZES[t]
alignment = 32
for _ in range(n_kv):
    k = string(); t, = struct.unpack_from("<i", b, o); o += 4
    if k == b"general.alignment": alignment, = struct.unpack_from("<I", b, o)
    skip(t)
infos = []
for _ in range(n_tensors):
    name = string(); nd, = struct.unpack_from("<I", b, o); o += 4
    dims = struct.unpack_from("<" + "Q" * nd, b, o); o += 8 * nd
    t, off = struct.unpack_from("<iQ", b, o); o += 12
    n = 1
    for d in dims: n *= d
    be, bb = BLOCKS[t]
    infos.append((name, off, n // be * bb))
data = (o + alignment - 1) // alignment * alignment
h = hashlib.sha256()
for name, off, nbytes in infos:
    h.update(name); h.update(b[data + off:data + off + nbytes])
print(h.hexdigest())
