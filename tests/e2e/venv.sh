#!/usr/bin/env bash
# Creates (once) the virtual environment the end-to-end tests use, under
# build/e2e-venv, with the official OpenAI Python SDK from PyPI. Prints the
# path of its python on the last line. Exits 3 when python3/venv/pip or the
# registry is unavailable (callers then SKIP the SDK tests).
set -u
cd "$(dirname "$0")/../.."
venv=build/e2e-venv
py="$venv/bin/python"
if [ -x "$py" ] && "$py" -c 'import openai' 2>/dev/null; then echo "$py"; exit 0; fi
command -v python3 >/dev/null 2>&1 || { echo "venv.sh: python3 not found" >&2; exit 3; }
mkdir -p build
if ! python3 -m venv "$venv" >&2; then echo "venv.sh: python3 -m venv failed" >&2; exit 3; fi
# pinned major version: the tests use the v1 client API
if ! timeout 240 "$venv/bin/pip" install --disable-pip-version-check -q 'openai>=1.30,<3' >&2; then
  echo "venv.sh: pip install openai failed (no registry?)" >&2; exit 3
fi
echo "$py"
