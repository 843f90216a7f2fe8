#!/bin/sh
# parplan compile --report writes one HTML page that a real browser draws
# (docs/simulate.md#the-report): the README's GPT on two stages of a 2x2
# mesh, rendered by headless Chromium (Debian's, which scripts/setup.sh
# installs) into a screenshot whose pixels must show each stage's colour
# (the devices and stages picture, the memory bars) and the timeline's
# compute and communication colours. The page fetches nothing: no script,
# no link, no source but itself.
# Usage: report-render.sh BIN-DIR
set -u
bin=$1
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "skipped: chromium is not installed (scripts/setup.sh installs it)"
  exit 0
fi
if ! command -v python3 >/dev/null 2>&1; then
  echo "skipped: python3 is not installed"
  exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin/parplan-zoo" gpt --layers 2 --hidden 64 --heads 4 --seq 32 --vocab 128 \
  --dynamic-batch -o "$dir/gpt.onnx" >/dev/null || fail "parplan-zoo"
"$bin/parplan" compile "$dir/gpt.onnx" --train --batch 16 --mesh 2x2 --stages 2 \
  --micro-batches 4 --schedule 1f1b \
  -o "$dir/plan" --report "$dir/report.html" >"$dir/compile.log" 2>&1 ||
  { cat "$dir/compile.log"; fail "compile --report"; }
grep -q "^  report           $dir/report.html$" "$dir/compile.log" ||
  { cat "$dir/compile.log"; fail "no report line"; }
if grep -Eiq '<script|<link|<img|src=|url\(' "$dir/report.html"; then
  fail "the report fetches something"
fi
# A home of its own: Chromium writes its profile there.
HOME=$dir timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
  --hide-scrollbars --window-size=1200,1400 --screenshot="$dir/report.png" \
  "file://$dir/report.html" >"$dir/chromium.log" 2>&1 ||
  { cat "$dir/chromium.log"; fail "chromium"; }
[ -s "$dir/report.png" ] || { cat "$dir/chromium.log"; fail "no screenshot"; }

python3 - "$dir/report.png" <<'EOF'
import struct, sys, zlib

def pixels(path):
    """(width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, chunks, idat = 8, {}, b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IDAT":
            idat += body
        else:
            chunks[kind] = body
        at += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and color in (2, 6), (depth, color)
    step = 4 if color == 6 else 3
    raw, stride, rows, previous = zlib.decompress(idat), width * step, [], None
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        prior = previous or bytearray(stride)
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = prior[i], prior[i - step] if i >= step else 0
            if kind == 1: line[i] = (line[i] + left) & 255
            elif kind == 2: line[i] = (line[i] + up) & 255
            elif kind == 3: line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append([tuple(line[x * step:x * step + 3]) for x in range(width)])
        previous = line
    return width, height, rows

width, height, rows = pixels(sys.argv[1])
counts = {}
for row in rows:
    for pixel in row:
        counts[pixel] = counts.get(pixel, 0) + 1
def rgb(text):
    return tuple(int(text[i:i + 2], 16) for i in (1, 3, 5))
# Stage 0 and 1 (Report.cpp's stageColor), compute and communication.
wanted = {"stage 0": "#59a14f", "stage 1": "#edc948", "compute": "#4e79a7",
          "communication": "#e15759"}
for name, color in wanted.items():
    n = counts.get(rgb(color), 0)
    assert n >= 100, "%s's colour %s: %d pixels" % (name, color, n)
white = counts.get((255, 255, 255), 0)
assert white < 0.97 * width * height, "the page is blank"
print("report-render: %dx%d, %d colours; %s" % (width, height, len(counts),
      ", ".join("%s %d px" % (n, counts[rgb(c)]) for n, c in wanted.items())))
EOF
