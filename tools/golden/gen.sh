#!/usr/bin/env bash
# Regenerates tests/data/golden_vllm.txt and tests/data/golden_hf.txt.
#
# Makes a Python venv (build/golden-venv, git-ignored; GOLDEN_VENV=DIR to put
# it elsewhere or reuse one), installs the pinned reference versions from
# PyPI, checks that torch works on the CPU, then runs tools/golden/gen.py.
#
# Note on size: PyPI has no CPU-only torch wheel for Linux x86_64. The wheel
# names 15 nvidia-* packages and triton as requirements, and `pip install
# --no-deps torch` does not work either: torch/__init__.py preloads every
# CUDA library (cublas, cudnn, nccl, ...) at import and raises when one is
# missing. So this does the plain install: about 7 GB on disk, 2-4 minutes
# at 50 MB/s. Nothing here uses a GPU.
set -euo pipefail
cd "$(dirname "$0")/../.."

TORCH_VERSION=2.9.1
TRANSFORMERS_VERSION=5.23.0
NUMPY_VERSION=2.4.6
VENV=${GOLDEN_VENV:-build/golden-venv}
PY=${PYTHON:-python3}

if [ ! -x "$VENV/bin/python" ]; then
  echo "gen.sh: creating $VENV"
  "$PY" -m venv "$VENV"
fi
have=$("$VENV/bin/python" - <<'PYEOF' 2>/dev/null || true
import importlib.metadata as m
try:
    print(m.version("torch").split("+")[0], m.version("transformers"), m.version("numpy"))
except Exception:
    print("none")
PYEOF
)
want="$TORCH_VERSION $TRANSFORMERS_VERSION $NUMPY_VERSION"
if [ "$have" != "$want" ]; then
  echo "gen.sh: installing torch==$TORCH_VERSION transformers==$TRANSFORMERS_VERSION numpy==$NUMPY_VERSION"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q \
    "torch==$TORCH_VERSION" "transformers==$TRANSFORMERS_VERSION" "numpy==$NUMPY_VERSION"
fi

# torch must import and compute on the CPU.
"$VENV/bin/python" - <<'PYEOF'
import torch
p = torch.softmax(torch.tensor([1.0, 2.0, 3.0]), dim=-1)
assert abs(float(p.sum()) - 1.0) < 1e-6, p
print("gen.sh: torch", torch.__version__, "ok on the CPU:", [round(float(x), 6) for x in p])
PYEOF

"$VENV/bin/python" tools/golden/gen.py
