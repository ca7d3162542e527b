#!/usr/bin/env bash
# Builds Warpscope's web page: a folder of static files (index.html, the app as WebAssembly
# and its JavaScript glue) that any web server can serve. See docs/web.md.
#
#   web/build.sh [OUT]        (OUT defaults to web/dist)
#
# Needs the wasm32-unknown-unknown target (rustup target add wasm32-unknown-unknown) and
# wasm-bindgen-cli of the same version as the wasm-bindgen crate in Cargo.lock:
#   cargo install wasm-bindgen-cli --version "$(web/build.sh --bindgen-version)" --no-default-features
set -euo pipefail
cd "$(dirname "$0")/.."

# The wasm-bindgen version Cargo.lock holds (the CLI must match it exactly).
version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "${1:-}" = "--bindgen-version" ]; then
    echo "$version"
    exit 0
fi
out=${1:-web/dist}

if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    rustup target add wasm32-unknown-unknown
fi
have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ "$have" != "$version" ]; then
    echo "web/build.sh: wasm-bindgen-cli $version is needed (found: ${have:-none}); install it with" >&2
    echo "  cargo install wasm-bindgen-cli --version $version --no-default-features" >&2
    exit 1
fi

cargo build --profile web -p warpscope-web --target wasm32-unknown-unknown
mkdir -p "$out"
wasm-bindgen --target web --no-typescript --out-dir "$out" \
    target/wasm32-unknown-unknown/web/warpscope_web.wasm
cp web/index.html web/worker.js "$out/"
echo "web/build.sh: the page is in $out ($(du -sh "$out" | cut -f1)); serve it with" \
     "python3 -m http.server -d $out"
