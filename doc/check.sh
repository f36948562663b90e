#!/usr/bin/env bash
# Build the documentation from scratch: every gallery example runs, the build is
# nitpicky (-n) and any warning is an error (-W). Not part of the test suite
# (the gallery takes minutes); run it before changing doc/ or examples/.
#
#   bash doc/check.sh            # build into doc/_build/html
#   bash doc/check.sh --serve    # then serve it on http://localhost:8000
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf doc/_build doc/auto_examples doc/generated doc/sg_execution_times.rst
start=$(date +%s)
MPLBACKEND=Agg python -m sphinx -b html -n -W --keep-going doc doc/_build/html
echo "documentation built in $(( $(date +%s) - start )) s (doc/_build/html/index.html)"
# sphinx-gallery's table of run times, slowest first.
python - <<'PY'
import re
text = open("doc/sg_execution_times.rst").read()
rows = re.findall(r":ref:`sphx_glr_auto_examples_(\w+)\.py`.*?\n\s*-\s*([\d:.]+)", text)
def seconds(t):
    parts = [float(p) for p in t.split(":")]
    return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
rows = sorted(((seconds(t), name) for name, t in rows), reverse=True)
print(f"gallery: {len(rows)} examples, {sum(s for s, _ in rows):.0f} s in total")
for s, name in rows:
    print(f"  {s:7.1f} s  {name}.py")
PY
if [[ "${1:-}" == "--serve" ]]; then
    python -m http.server 8000 --directory doc/_build/html
fi
