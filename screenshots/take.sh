#!/usr/bin/env bash
# Starts the app in a virtual X display on fixed inputs (the built-in naive matrix
# multiplication on the Fermi 16 KB preset) and writes one PNG per main view, one of the
# side-by-side mode (round-robin vs greedy-then-oldest), one of a box selection in the light
# theme, one of the timing model's cycle axis, three of four panes, one of two kernels side by side,
# one of the misses per source line and one of the performance model of two kernels side by side
# into screenshots/ (at
# 1600x1000) and screenshots/1280x800/.
#
#   screenshots/take.sh                # needs Xvfb (installed with apt-get when run as root)
#   PROFILE=dev screenshots/take.sh    # use the debug build (no release build needed)
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
# Each size: a virtual screen of that size, the window filling it.
for size in 1600x1000 1280x800; do
  out=screenshots
  [ "$size" = 1600x1000 ] || out="screenshots/$size"
  mkdir -p "$out"
  display=":$((90 + RANDOM % 9))"
  Xvfb "$display" -screen 0 "${size}x24" >/dev/null 2>&1 &
  xvfb=$!
  trap 'kill $xvfb 2>/dev/null || true' EXIT
  sleep 1
  rm -f "$out"/*.png
  DISPLAY="$display" timeout 600 "target/$dir/warpscope" --screenshots "$out" --window "$size"
  kill $xvfb 2>/dev/null || true
  ls -l "$out"/*.png
done
