#!/usr/bin/env python3
"""Tesseract's own per-frame output probabilities for whole-image lines, the oracle for the
recognizer's network (tests/ocr.rs).

    python3 scripts/make-ocr-softmax-fixture.py [--count 40]

Runs `tesseract IMAGE - --oem 1 --psm 13 -l eng -c lstm_choice_mode=1 hocr` on the first
fixture lines: psm 13 feeds the whole image to the network, and
lstm_choice_mode=1 lists, for every output frame inside a character, each code whose
probability is at least 1 % as `int(100 · p)` (truncated). Writes softmax.json: per line the
frames in order, each a list of [text, percent] with the blank as "".
"""

import argparse
import html
import json
import os
import re
import subprocess
import tempfile


def frames(image):
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "out")
        subprocess.run(["tesseract", image, base, "--oem", "1", "--psm", "13", "-l", "eng",
                        "-c", "lstm_choice_mode=1", "hocr"],
                       check=True, capture_output=True, env={**os.environ, "OMP_THREAD_LIMIT": "1"})
        doc = open(base + ".hocr", encoding="utf-8").read()
    out = []
    for step in re.split(r"<span class='ocrx_cinfo' id='timestep", doc)[1:]:
        step = step.split("class='ocrx_word'")[0]
        choices = re.findall(r"title='x_confs (\d+)'>([^<]*)<", step)
        out.append([[html.unescape(t), int(p)] for p, t in choices])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--dir", default="tests/fixtures/ocr")
    args = ap.parse_args()
    meta = json.load(open(os.path.join(args.dir, "lines.json")))
    lines = []
    for rec in meta["lines"][: args.count]:
        lines.append({"image": rec["image"], "frames": frames(os.path.join(args.dir, rec["image"]))})
    ver = subprocess.run(["tesseract", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    with open(os.path.join(args.dir, "softmax.json"), "w", encoding="utf-8") as fh:
        json.dump({"generator": "scripts/make-ocr-softmax-fixture.py", "tesseract": ver,
                   "command": "tesseract IMAGE out --oem 1 --psm 13 -l eng -c lstm_choice_mode=1 hocr",
                   "lines": lines}, fh, ensure_ascii=False)
        fh.write("\n")


if __name__ == "__main__":
    main()
