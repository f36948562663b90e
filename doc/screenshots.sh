#!/usr/bin/env bash
# Screenshots of the built site in headless Chromium (Debian's chromium), at
# desktop (1400 px) and phone (390 px) widths, into doc/_screenshots/ (ignored
# by git). Build first: bash doc/check.sh. Pages may be given as arguments
# (paths under _build/html without .html), e.g. bash doc/screenshots.sh guide/bhc
set -euo pipefail
cd "$(dirname "$0")"
html="$PWD/_build/html"
out="$PWD/_screenshots"
mkdir -p "$out"
pages=(index guide/hierarchical auto_examples/plot_tumour_marginals
       auto_examples/plot_ginkgo_sparse_trellis auto_examples/plot_entropy_agglomeration_cod)
if [[ $# -gt 0 ]]; then pages=("$@"); fi
for page in "${pages[@]}"; do
    for size in 1400,2200 390,1800; do
        profile=$(mktemp -d)
        name="$(echo "$page" | tr / _)_${size%%,*}.png"
        chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
            --disable-background-networking --disable-component-update --disable-sync \
            --hide-scrollbars --user-data-dir="$profile" --window-size="$size" \
            --screenshot="$out/$name" "file://$html/$page.html" >/dev/null 2>&1
        rm -rf "$profile"
        echo "$out/$name"
    done
done
