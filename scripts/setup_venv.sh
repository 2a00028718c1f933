#!/usr/bin/env bash
# setup_venv.sh: create .venv with the pinned Python packages of tests/requirements.txt (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
req=tests/requirements.txt
stamp=.venv/.requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$req"
echo "$want" > "$stamp"
