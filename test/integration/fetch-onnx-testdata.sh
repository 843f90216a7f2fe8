#!/usr/bin/env bash
# Prints the directory of ONNX's backend test data (node, pytorch-converted,
# pytorch-operator, simple: one folder per test with model.onnx and
# test_data_set_*/), as Debian's libonnx-testdata ships it.
#
# Uses the installed package when there is one; otherwise downloads the .deb
# with `apt-get download` (no root needed) and unpacks it with `dpkg-deb -x`
# into ${PARPLAN_CACHE_DIR:-$HOME/.cache/parplan}/onnx-testdata, once.
#
# Exit status: 0 with the directory on stdout; 77 when the package cannot be
# had (offline, no apt lists, no apt-get): callers report the test skipped.
set -euo pipefail

readonly package=libonnx-testdata
readonly data_suffix=usr/share/libonnx-testdata/data

unavailable() {
  echo "fetch-onnx-testdata: $*" >&2
  exit 77
}

if [[ -d /$data_suffix/node ]]; then
  echo "/$data_suffix"
  exit 0
fi

cache_root=${PARPLAN_CACHE_DIR:-${HOME:-/tmp}/.cache/parplan}
cache=$cache_root/onnx-testdata
if [[ -d $cache/pkg/$data_suffix/node ]]; then
  echo "$cache/pkg/$data_suffix"
  exit 0
fi

command -v apt-get >/dev/null || unavailable "apt-get not found"
command -v dpkg-deb >/dev/null || unavailable "dpkg-deb not found"
mkdir -p "$cache"
# Download and unpack in a private folder, then move it in place: two runs
# at once neither see nor leave a half-unpacked tree.
tmp=$(mktemp -d "$cache/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && apt-get download "$package" >download.log 2>&1); then
  sed 's/^/  /' "$tmp/download.log" >&2
  unavailable "apt-get download $package failed"
fi
debs=("$tmp"/"$package"_*.deb)
[[ -f ${debs[0]} ]] || unavailable "apt-get download left no .deb"
echo "fetch-onnx-testdata: unpacking $(basename "${debs[0]}")" >&2
dpkg-deb -x "${debs[0]}" "$tmp/pkg"
[[ -d $tmp/pkg/$data_suffix/node ]] ||
  { echo "fetch-onnx-testdata: ${debs[0]} has no $data_suffix/node" >&2; exit 1; }
mv -T "$tmp/pkg" "$cache/pkg" 2>/dev/null || true # Another run won: fine.
echo "$cache/pkg/$data_suffix"
