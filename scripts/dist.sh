#!/usr/bin/env bash
# Build the release archives into dist/: for each platform, a directory
# quiver-VERSION-OS-ARCH holding the quiver binary, LICENSE,
# THIRD_PARTY_NOTICES.md, README.md and docs/ (where its links lead), packed as a .tar.gz, and the
# SHA-256 sums of every archive in dist/SHA256SUMS.
#   scripts/dist.sh VERSION LDFLAGS     build the archives
#   scripts/dist.sh check               unpack the linux/amd64 archive in a
#                                       clean directory, check its sum, and
#                                       run quiver version and a serve/query
#                                       round trip from it
# Only linux/amd64 is built: DuckDB's bindings link a prebuilt static
# library per platform through cgo, and a linux/arm64 build needs an
# aarch64 C toolchain this build does not install.
set -euo pipefail
cd "$(dirname "$0")/.."
platforms="linux/amd64"

build() {
	local version=$1 ldflags=$2
	[ -n "$version" ] || version=devel
	rm -rf dist && mkdir -p dist
	for p in $platforms; do
		local os=${p%/*} arch=${p#*/}
		local name=quiver-$version-$os-$arch
		mkdir -p "dist/$name"
		CGO_ENABLED=1 GOOS=$os GOARCH=$arch go build -tags duckdb_arrow \
			-ldflags "$ldflags" -o "dist/$name/quiver" ./cmd/quiver
		cp -R LICENSE THIRD_PARTY_NOTICES.md README.md docs "dist/$name/"
		tar -C dist -czf "dist/$name.tar.gz" "$name"
		rm -rf "dist/${name:?}"
	done
	(cd dist && sha256sum ./*.tar.gz >SHA256SUMS)
	ls -l dist
}

check() {
	local archive
	archive=$(ls dist/quiver-*-linux-amd64.tar.gz 2>/dev/null | head -n1)
	[ -n "$archive" ] || { echo "no linux/amd64 archive in dist/: run make dist" >&2; exit 1; }
	(cd dist && sha256sum --check --quiet SHA256SUMS)
	# Globals, for the trap that runs after check returns.
	dir=$(mktemp -d)
	pid=""
	trap 'if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi; rm -rf "$dir"' EXIT
	tar -C "$dir" -xzf "$archive"
	local root
	root=$(echo "$dir"/quiver-*)
	for f in quiver LICENSE THIRD_PARTY_NOTICES.md README.md docs/getting-started.md; do
		[ -e "$root/$f" ] || { echo "$archive lacks $f" >&2; exit 1; }
	done
	local name version
	name=$(basename "$archive" .tar.gz)
	version=${name#quiver-}
	version=${version%-linux-amd64}
	(cd "$root" && ./quiver version) | tee "$dir/version.txt"
	grep -q "^quiver $version " "$dir/version.txt" || { echo "quiver version does not say $version" >&2; exit 1; }
	(cd "$root" && exec ./quiver serve --db "$dir/check.duckdb" --flight 127.0.0.1:0 --mysql "" --http "" 2>"$dir/serve.log") &
	pid=$!
	local addr=""
	for _ in $(seq 1 600); do
		addr=$(sed -n 's/^quiver: flight listening on //p' "$dir/serve.log")
		[ -n "$addr" ] && break
		kill -0 "$pid" 2>/dev/null || { cat "$dir/serve.log" >&2; exit 1; }
		sleep 0.1
	done
	[ -n "$addr" ] || { echo "quiver serve did not start" >&2; cat "$dir/serve.log" >&2; exit 1; }
	local got
	got=$("$root/quiver" query --server "$addr" "SELECT 6 * 7 AS answer")
	echo "$got"
	echo "$got" | grep -qw 42 || { echo "the round trip gave no 42" >&2; exit 1; }
	echo "dist check: $name unpacks, says $version and serves"
}

case "${1:-}" in
check) check ;;
*) build "${1:-}" "${2:-}" ;;
esac
