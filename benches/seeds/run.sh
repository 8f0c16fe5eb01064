#!/usr/bin/env bash
# agentmem against the seeds' own Python implementations, in one run (issue 20, item 5).
#
#   bash benches/seeds/run.sh            # 10,000 appends + reload with each, 3 runs each
#   bash benches/seeds/run.sh --quick    # 200 messages, 1 run: checks that everything works
#
# Installs swarms and praisonaiagents (pinned below) from PyPI into a virtualenv of their own,
# ${AGENTMEM_CI_CACHE:-~/.cache/agentmem-ci}/seeds-venv (made again when the pins change;
# delete it to start over), builds and runs the agentmem bench (`cargo bench --features sqlite
# --bench seeds`, benches/seeds/agentmem.rs), runs benches/seeds/seeds.py once per Python
# implementation, and prints one markdown table (benches/seeds/table.py) plus the machine's
# state. Everything writes under one temp dir on the same disk (removed at the end).
# Not run by CI: only this script runs the Python side.
#
# Environment: SEEDS_N (messages, default 10000), SEEDS_REPEAT (runs per case, default 3),
# SEEDS_BUDGET (seconds of appends after which a Python implementation that rewrites its whole
# file per message stops, default 60; 0 = none: PraisonAI's 10,000 then take about an hour),
# SEEDS_TMPDIR (where the temp dir goes, default $TMPDIR or /tmp), SEEDS_PYTHON (the
# interpreter for the venv, default python3.11, else python3), CARGO_TARGET_DIR as usual.
# The results (JSON lines) and the table are also kept in the cache dir as seeds-last.jsonl
# and seeds-last.md.
set -euo pipefail

SWARMS_VERSION=16.0.3
PRAISONAI_VERSION=1.7.17

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${SEEDS_N:-10000}
repeat=${SEEDS_REPEAT:-3}
budget=${SEEDS_BUDGET:-60}
if [[ ${1:-} == --quick ]]; then
    n=200 repeat=1 budget=10
elif [[ $# -gt 0 ]]; then
    sed -n '2,6p' "$0" >&2
    exit 2
fi

cache=${AGENTMEM_CI_CACHE:-$HOME/.cache/agentmem-ci}
venv=$cache/seeds-venv
python=${SEEDS_PYTHON:-$(command -v python3.11 || command -v python3)}
pins="swarms==$SWARMS_VERSION praisonaiagents==$PRAISONAI_VERSION"
mkdir -p "$cache"
if [[ ! -x $venv/bin/python || $(cat "$venv/.pins" 2>/dev/null) != "$pins" ]]; then
    echo "== virtualenv $venv ($pins)" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check $pins >&2
    echo "$pins" >"$venv/.pins"
fi

work=$(mktemp -d "${SEEDS_TMPDIR:-${TMPDIR:-/tmp}}/agentmem-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT
results=$work/results.jsonl
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date -u '+%Y-%m-%d %H:%M UTC')

echo "== agentmem (cargo bench --features sqlite --bench seeds; n=$n, $repeat runs)" >&2
mkdir -p "$work/agentmem"
(cd "$root" && SEEDS_N=$n SEEDS_REPEAT=$repeat SEEDS_DIR=$work/agentmem \
    cargo bench --quiet --features sqlite --bench seeds) | grep '^{' >>"$results"

# The Python side: a fresh interpreter per implementation, a private HOME, no telemetry.
for impl in swarms swarms-autosave praisonai praisonai-keep-all; do
    echo "== $impl (n=$n, $repeat runs, budget ${budget}s)" >&2
    mkdir -p "$work/$impl/home"
    (cd "$work/$impl" && env HOME="$work/$impl/home" WORKSPACE_DIR="$work/$impl/workspace" \
        PRAISONAI_HOME="$work/$impl/praisonai" SWARMS_TELEMETRY_ON=false \
        PRAISONAI_TELEMETRY_DISABLED=true DO_NOT_TRACK=true \
        "$venv/bin/python" "$here/seeds.py" "$impl" --n "$n" --repeat "$repeat" \
        --budget "$budget" --dir "$work/$impl" 2>"$work/$impl.log" | grep '^{' >>"$results") || {
        echo "$impl failed; its log:" >&2
        tail -20 "$work/$impl.log" >&2
        exit 1
    }
    grep -E "^$impl run" "$work/$impl.log" >&2 || true
done

load_after=$(cut -d' ' -f1-3 /proc/loadavg)
fs=$(df -T "$work" | awk 'NR == 2 { print $2 " on " $1 }')
table=$("$venv/bin/python" "$here/table.py" "$results")
{
    echo "$table"
    echo
    echo "Measured $started on $(nproc) CPUs ($(uname -r)), temp dir on $fs;" \
        "load average (1/5/15 min) $load_before before, $load_after after."
    echo "Versions: agentmem $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo '?')," \
        "$(rustc --version | cut -d' ' -f1-2), $("$venv/bin/python" --version)," \
        "$("$venv/bin/pip" list --disable-pip-version-check 2>/dev/null |
            awk '$1 == "swarms" || $1 == "praisonaiagents" { printf "%s%s %s", sep, $1, $2; sep = ", " }')."
    echo "Command: \`SEEDS_N=$n SEEDS_REPEAT=$repeat SEEDS_BUDGET=$budget bash benches/seeds/run.sh\`"
} | tee "$cache/seeds-last.md"
cp "$results" "$cache/seeds-last.jsonl"
