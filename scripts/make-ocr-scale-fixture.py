#!/usr/bin/env python3
"""Leptonica's own pixScale outputs, the oracle for src/ocr/scale.rs.

    python3 scripts/make-ocr-scale-fixture.py

Calls the installed liblept (Debian's libleptonica-dev / liblept5, which tesseract-ocr
depends on) through ctypes on a few fixture line images at factors that reach every branch of
pixScale (area map with and without sharpening, linear interpolation with and without it, the
exact x2 and x4 routines, the 2x2 halving) and writes each result as raw 8-bit grey to
tests/fixtures/ocr/scale/NAME_WxH.grey, listed in scale.json.
"""

import ctypes
import json
import os
import zlib
import struct

L = ctypes.CDLL("liblept.so.5")
P = ctypes.c_void_p
L.pixRead.restype = P
L.pixRead.argtypes = [ctypes.c_char_p]
L.pixScale.restype = P
L.pixScale.argtypes = [P, ctypes.c_float, ctypes.c_float]
L.pixConvertTo8.restype = P
L.pixConvertTo8.argtypes = [P, ctypes.c_int]
for f in ("pixGetWidth", "pixGetHeight", "pixGetDepth"):
    getattr(L, f).argtypes = [P]
L.pixGetPixel.argtypes = [P, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_uint32)]

OUT = "tests/fixtures/ocr/scale"
CASES = [  # (image, factor)
    ("000", 36 / 49), ("000", 36 / 120), ("000", 0.18), ("000", 0.5), ("000", 0.25),
    ("002", 36 / 25), ("002", 36 / 30), ("005", 2.0), ("005", 4.0), ("002", 36 / 21),
    ("005", 36 / 22), ("005", 1.0), ("011", 36 / 28), ("011", 0.65),
]


def grey(p):
    w, h = L.pixGetWidth(p), L.pixGetHeight(p)
    v = ctypes.c_uint32()
    out = bytearray()
    for y in range(h):
        for x in range(w):
            L.pixGetPixel(p, x, y, ctypes.byref(v))
            out.append(v.value)
    return w, h, bytes(out)


def main():
    cases = []
    for name, f in CASES:
        src = L.pixRead(f"tests/fixtures/ocr/lines/{name}.png".encode())
        assert L.pixGetDepth(src) == 8, "fixture lines are 8-bit grey"
        w, h, data = grey(L.pixScale(src, f, f))
        fname = f"{name}_{w}x{h}.grey"
        with open(os.path.join(OUT, fname), "wb") as fh:
            fh.write(data)
        cases.append({"image": f"lines/{name}.png", "factor": ctypes.c_float(f).value, "width": w, "height": h, "output": f"scale/{fname}"})
        print(name, f, w, h)
    with open(os.path.join(OUT, "scale.json"), "w") as fh:
        json.dump({"generator": "scripts/make-ocr-scale-fixture.py", "leptonica": "1.82 (Debian)", "cases": cases}, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
