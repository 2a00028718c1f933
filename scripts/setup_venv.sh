#!/usr/bin/env bash
# setup_venv.sh: create .venv with the pinned Python packages of tests/requirements.txt and bench/requirements.txt (idempotent).
# The peers of bench/requirements.txt are needed by make test too: its benchmark smoke
# test (tests/bench) loads every peer on a tiny model and checks its scores.
set -euo pipefail
cd "$(dirname "$0")/.."
reqs=(tests/requirements.txt bench/requirements.txt)
stamp=.venv/.requirements.sha256
want=$(cat "${reqs[@]}" | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
python3 -m venv .venv
echo "setup_venv: installing ${reqs[*]} into .venv" >&2
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r tests/requirements.txt -r bench/requirements.txt
echo "$want" > "$stamp"
