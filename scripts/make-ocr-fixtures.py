#!/usr/bin/env python3
"""Renders the OCR fixture: text-line images from known text, and Tesseract's reading of each.

    python3 scripts/make-ocr-fixtures.py [--count 320] [--out tests/fixtures/ocr]

Needs Pillow and numpy (a venv: `pip install --only-binary :all: pillow numpy`), the Debian
fonts (fonts-dejavu-core/-extra, fonts-liberation) and Debian's `tesseract` with
`tesseract-ocr-eng`. Writes `lines/NNN.png` (8-bit grey) and `lines.json`: per line the ground
truth, how it was rendered, and tesseract's text for `--oem 1 --psm 7 -l eng` twice — with the
model as shipped (its LSTM dictionaries steer the beam search) and with a copy of it without the
dictionary entries (made with combine_tessdata), which is what our recognizer does by default;
and, without dictionaries, for `--psm 13` (the whole image taken as the line, no cut).
The `-c lstm_use_matrix=0` / `load_*_dawg=0` switches do not unload them in tesseract 5.3's
command line. Deterministic for a given seed, fonts and tesseract build.
"""

import argparse
import json
import os
import random
import subprocess
import tempfile

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONT_DIRS = ["/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/liberation"]
FONTS = [
    "DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf", "DejaVuSerif-Italic.ttf",
    "DejaVuSansMono.ttf", "DejaVuSansCondensed.ttf", "LiberationSans-Regular.ttf",
    "LiberationSans-Bold.ttf", "LiberationSerif-Regular.ttf", "LiberationSerif-Italic.ttf",
    "LiberationMono-Regular.ttf", "LiberationSansNarrow-Regular.ttf",
]
WORDS = """the of and to in is was for on that with as by at from his her this which or are
be an had not but what all were when we there can more if one about so out up them some time
these would other into has two may could first people than like then water been called its
now find long down day did get come made part over new sound take only little work know place
year live back give most very after thing our just name good sentence man think say great where
help through much before line right too mean old any same tell boy follow came want show also
around form three small set put end does another well large must big even such because turn
here why ask went men read need land different home us move try kind hand picture again change
off play spell air away animal house point page letter mother answer found study still learn
should America world high every near add food between own below country plant last school father
keep tree never start city earth eye light thought head under story saw left few while along
might close something seem next hard open example begin life always those both paper together
got group often run important until children side feet car mile night walk white sea began grow
took river four carry state once book hear stop without second later miss idea enough eat face
watch far Indian really almost let above girl sometimes mountain cut young talk soon list song
being leave family quick brown fox jumps lazy dog Kopitiam coffee toast kaya Monday Tuesday
Friday January March October London Paris Singapore invoice total amount receipt order""".split()
PUNCT_AFTER = [",", ".", ";", ":", "!", "?", ""]


def token(rng):
    r = rng.random()
    if r < 0.08:
        return str(rng.randint(0, 9999))
    if r < 0.11:
        return f"{rng.randint(0, 999)}.{rng.randint(0, 99):02d}"
    if r < 0.13:
        return f"${rng.randint(1, 500)}.{rng.randint(0, 99):02d}"
    if r < 0.15:
        return f"{rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}/{rng.randint(1990, 2030)}"
    if r < 0.17:
        return f"({rng.choice(WORDS)})"
    if r < 0.19:
        return f'"{rng.choice(WORDS)}"'
    if r < 0.21:
        return f"{rng.choice(WORDS)}-{rng.choice(WORDS)}"
    if r < 0.23:
        return f"{rng.randint(1, 100)}%"
    w = rng.choice(WORDS)
    if rng.random() < 0.12:
        w = w.capitalize()
    return w


def line_text(rng):
    n = rng.randint(3, 9)
    words = []
    for i in range(n):
        w = token(rng)
        if i < n - 1 and rng.random() < 0.15:
            w += rng.choice(PUNCT_AFTER[:4])
        words.append(w)
    text = " ".join(words)
    if rng.random() < 0.5:
        text = text[0].upper() + text[1:]
        text += rng.choice([".", ".", "!", "?", ":"])
    return text


def font_path(name):
    for d in FONT_DIRS:
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    raise SystemExit(f"font {name} not found (apt-get install fonts-dejavu-core fonts-dejavu-extra fonts-liberation)")


def render(text, font, px, blur, noise, angle, rng):
    f = ImageFont.truetype(font, px)
    left, top, right, bottom = f.getbbox(text)
    margin = max(4, px // 3)
    w, h = right - left + 2 * margin, bottom - top + 2 * margin
    img = Image.new("L", (w, h), 255)
    ImageDraw.Draw(img).text((margin - left, margin - top), text, font=f, fill=0)
    if angle:
        img = img.rotate(angle, resample=Image.BICUBIC, expand=True, fillcolor=255)
    if blur:
        img = img.filter(ImageFilter.GaussianBlur(blur))
    if noise:
        a = np.asarray(img, dtype=np.float32)
        nrng = np.random.default_rng(rng.randint(0, 2**31))
        a = a + nrng.normal(0, noise, a.shape)
        img = Image.fromarray(np.clip(a, 0, 255).round().astype(np.uint8), "L")
    return img


def tessdata_without_dictionaries(workdir):
    """A copy of eng.traineddata with only the LSTM network, charset and recoder entries."""
    src = next(p for p in ("/usr/share/tesseract-ocr/5/tessdata/eng.traineddata",
                           "/usr/share/tesseract-ocr/4.00/tessdata/eng.traineddata") if os.path.exists(p))
    subprocess.run(["combine_tessdata", "-u", src, os.path.join(workdir, "all", "eng.")], check=True, capture_output=True)
    for part in ("lstm", "lstm-unicharset", "lstm-recoder", "version"):
        os.replace(os.path.join(workdir, "all", f"eng.{part}"), os.path.join(workdir, f"eng.{part}"))
    subprocess.run(["combine_tessdata", os.path.join(workdir, "eng.")], check=True, capture_output=True)
    return workdir


def tesseract(path, tessdata=None, psm=7):
    cmd = ["tesseract", path, "-", "--oem", "1", "--psm", str(psm), "-l", "eng"]
    if tessdata:
        cmd += ["--tessdata-dir", tessdata]
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    return out.strip("\n\f").strip("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=320)
    ap.add_argument("--out", default="tests/fixtures/ocr")
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp()
    os.makedirs(os.path.join(work, "all"))
    nodict = tessdata_without_dictionaries(work)
    os.makedirs(os.path.join(args.out, "lines"), exist_ok=True)
    records = []
    for i in range(args.count):
        text = line_text(rng)
        font = FONTS[i % len(FONTS)]
        px = rng.choice([14, 16, 18, 20, 24, 28, 32, 40])
        blur = rng.choice([0, 0, 0, 0.4, 0.7])
        noise = rng.choice([0, 0, 4, 8])
        angle = rng.choice([0, 0, 0, -0.8, -0.4, 0.4, 0.8])
        img = render(text, font_path(font), px, blur, noise, angle, rng)
        name = f"lines/{i:03d}.png"
        path = os.path.join(args.out, name)
        img.save(path, optimize=True)
        records.append({
            "image": name, "truth": text, "font": font, "px": px, "blur": blur,
            "noise": noise, "angle": angle,
            "tesseract": tesseract(path), "tesseract_nodict": tesseract(path, nodict),
            # --psm 13: the whole image is the line (no cut), without dictionaries.
            "tesseract_raw_nodict": tesseract(path, nodict, psm=13),
        })
        print(f"{i:03d} {text!r} -> {records[-1]['tesseract_nodict']!r}", flush=True)
    ver = subprocess.run(["tesseract", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    meta = {"generator": "scripts/make-ocr-fixtures.py", "seed": args.seed, "tesseract": ver,
            "command": "tesseract IMAGE - --oem 1 --psm 7 -l eng [--tessdata-dir DIR_WITHOUT_DICTIONARIES]",
            "lines": records}
    with open(os.path.join(args.out, "lines.json"), "w") as fh:
        json.dump(meta, fh, indent=1, ensure_ascii=False)
        fh.write("\n")


if __name__ == "__main__":
    main()
