#!/usr/bin/env bash
# Starts the app in a virtual X display on fixed inputs (the built-in naive matrix
# multiplication on the Fermi 16 KB preset) and writes one PNG per main view, one of the
# side-by-side mode (round-robin vs greedy-then-oldest), one of a box selection in the light
# theme, one of the timing model's cycle axis, three of four panes, one of two kernels side by side,
# one of the misses per source line and one of the performance model of two kernels side by side,
# and (20) a Dinero IV trace opened streamed, as the app opens files over 256 MiB,
# into screenshots/ (at
# 1600x1000), screenshots/1280x800/ and screenshots/1024x700/.
#
#   screenshots/take.sh                # needs Xvfb (installed with apt-get when run as root)
#   PROFILE=dev screenshots/take.sh    # use the debug build (no release build needed)
#   SIZES=1024x700 screenshots/take.sh # only these window sizes
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v Xvfb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends xvfb xauth libgl1-mesa-dri libegl1 \
      libxkbcommon-x11-0 libx11-xcb1 libxcursor1 libxrandr2 libxi6 >/dev/null
  else
    echo "Xvfb is needed: apt-get install xvfb libgl1-mesa-dri libegl1" >&2
    exit 1
  fi
fi

profile="${PROFILE:-release}"
cargo build --profile "$profile" --bin warpscope
dir=release
[ "$profile" = dev ] && dir=debug

export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 700 "$XDG_RUNTIME_DIR"
# A merged sweep for the heatmap shot: Nugteren et al. fig. 12's grid of cache sizes and ways
# (modulo index) over naive and tiled matmul, run as two shards and merged (docs/cluster.md).
sweep="$(mktemp -d)"
trap 'rm -rf "$sweep"' EXIT
"target/$dir/warpscope" sweep --kernel matmul n=64 --input '--kernel matmul-tiled n=64' \
  --preset fermi-16k --set-index modulo --vary cache-size=4K,8K,16K,32K,64K --vary ways=1,2,4,8,16 \
  --plan "$sweep" 2>/dev/null
for k in 0 1; do "target/$dir/warpscope" sweep --plan "$sweep" --shard "$k/2" 2>/dev/null; done
"target/$dir/warpscope" sweep merge "$sweep" -o "$sweep/results.parquet"
# A CPU's reference stream of naive matmul n=128 as a Dinero IV trace (4.2 M references), for
# the streamed shot: the app opens it as it opens files over 256 MiB, read as each run goes.
python3 - "$sweep/matmul128.din" <<'PY'
import sys
n, a, b, c = 128, 0x10000000, 0x10100000, 0x10200000
with open(sys.argv[1], "w") as f:
    out = []
    for i in range(n):
        for j in range(n):
            for k in range(n):
                out.append("0 %x\n0 %x\n" % (a + (i * n + k) * 4, b + (k * n + j) * 4))
            out.append("1 %x\n" % (c + (i * n + j) * 4))
        f.write("".join(out))
        out.clear()
PY
# Each size: a virtual screen of that size, the window filling it.
for size in ${SIZES:-1600x1000 1280x800 1024x700}; do
  out=screenshots
  [ "$size" = 1600x1000 ] || out="screenshots/$size"
  mkdir -p "$out"
  display=":$((90 + RANDOM % 9))"
  Xvfb "$display" -screen 0 "${size}x24" >/dev/null 2>&1 &
  xvfb=$!
  trap 'kill $xvfb 2>/dev/null || true; rm -rf "$sweep"' EXIT
  sleep 1
  rm -f "$out"/*.png
  # The app's saved state (eframe keeps the last window's geometry in XDG_DATA_HOME) must not
  # change the shots: it runs with an empty one.
  DISPLAY="$display" XDG_DATA_HOME="$sweep/data" timeout 600 "target/$dir/warpscope" \
    --screenshots "$out" --window "$size" \
    --sweep "$sweep/results.parquet" --shot-streamed "$sweep/matmul128.din"
  kill $xvfb 2>/dev/null || true
  ls -l "$out"/*.png
done
