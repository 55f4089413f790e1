#!/usr/bin/env bash
# Write THIRD_PARTY_NOTICES.md: the license of every module linked into
# the quiver binary, read from the module graph and classified by
# go-licenses (installed from the Go module proxy and cached under
# $HOME/.cache/quiver, keyed by its version).
#   scripts/notice.sh          rewrites THIRD_PARTY_NOTICES.md
#   scripts/notice.sh check    fails when the file is not what it would write
set -euo pipefail
version=v1.6.0
cache=${QUIVER_CACHE:-$HOME/.cache/quiver}/go-licenses-$version
tool=$cache/go-licenses
cd "$(dirname "$0")/.."
if [ ! -x "$tool" ]; then
	mkdir -p "$cache"
	GOBIN="$cache" GOFLAGS= go install "github.com/google/go-licenses@$version"
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The license URLs go-licenses looks up on the network are not used (the
# template prints each license's text), so its warnings about them are
# dropped; errors stay. A confidence of 0.8 identifies the BSD-3 variant
# modernc.org/mathutil words its third clause in, which 0.9 does not.
GOFLAGS=-tags=duckdb_arrow "$tool" report ./cmd/quiver \
	--ignore github.com/quiverdata/quiver --confidence_threshold 0.8 \
	--template scripts/notice.tpl >"$out" 2> >(grep -v 'Error discovering license URL' >&2)
case "${1:-}" in
check)
	diff -u THIRD_PARTY_NOTICES.md "$out" || { echo "THIRD_PARTY_NOTICES.md is stale: run scripts/notice.sh" >&2; exit 1; } ;;
*)
	cp "$out" THIRD_PARTY_NOTICES.md ;;
esac
