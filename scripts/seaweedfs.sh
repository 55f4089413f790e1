#!/usr/bin/env bash
# Build and run a throwaway SeaweedFS object store on 127.0.0.1 for tests
# that need S3 and an Iceberg REST catalog.
#   scripts/seaweedfs.sh build    builds if needed, prints the binary's path
#   scripts/seaweedfs.sh path     prints the path only if already built
#   scripts/seaweedfs.sh start DIR [S3PORT] [CATALOGPORT]
#       prints S3=URL CATALOG=URL REGION=... ACCESS_KEY=... SECRET_KEY=...
#       Ports default to 8333 and 8181; 0 picks a free one. The other ports
#       mini needs are always picked free. S3_BUCKET and S3_TABLE_BUCKET
#       (comma-separated) name buckets and Iceberg table buckets to create.
#   scripts/seaweedfs.sh stop DIR
# The binary is built from the Go module proxy (SeaweedFS's go.mod has
# replace directives, so `go install mod@version` refuses it) and cached
# under $HOME/.cache/quiver, keyed by the version below.
set -euo pipefail
version=v0.0.0-20261109003541-7506e5f91cd6
module=github.com/seaweedfs/seaweedfs
cache=${QUIVER_CACHE:-$HOME/.cache/quiver}/seaweedfs-$version
bin=$cache/weed
# A fixed test key pair, so tests exercise signed requests.
access_key=quiver
secret_key=quiver-secret
region=us-east-1

build() {
	if [ -x "$bin" ]; then echo "$bin"; return; fi
	mkdir -p "$cache"
	# One build at a time; whoever waited finds the binary already there.
	exec 9>"$cache/lock"
	flock 9
	if [ -x "$bin" ]; then exec 9>&-; echo "$bin"; return; fi
	tmp=$(mktemp -d)
	# The module cache is read-only; make sure the copy can be removed.
	trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
	echo "building SeaweedFS $version (takes several minutes)" >&2
	# A throwaway module, so the download does not touch any go.mod.
	mkdir "$tmp/mod"
	printf 'module tmp\n\ngo 1.24\n' >"$tmp/mod/go.mod"
	local src
	src=$(cd "$tmp/mod" && GOFLAGS=-mod=mod go mod download -json "$module@$version" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	[ -n "$src" ] || { echo "could not download $module@$version" >&2; exit 1; }
	cp -R "$src" "$tmp/src"
	chmod -R u+w "$tmp/src"
	(cd "$tmp/src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -o "$tmp/weed" ./weed)
	# Move into place atomically, so nobody ever runs a half-written file.
	mv "$tmp/weed" "$bin.tmp.$$"
	mv -f "$bin.tmp.$$" "$bin"
	chmod -R u+w "$tmp"; rm -rf "$tmp"; trap - EXIT
	exec 9>&-
	echo "$bin"
}

# Ports are picked below 32768 so they stay out of Linux's ephemeral range,
# where mini's own outgoing connections could take a port before it is bound.
used=" "
free_port() {
	while :; do
		port=$((20000 + RANDOM % 12000))
		case "$used" in *" $port "*) continue ;; esac
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			used="$used$port "
			return
		fi
	done
}

start() {
	local dir=${1:?data directory} s3port=${2:-8333} catport=${3:-8181}
	if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
		echo "SeaweedFS already runs with its data in $dir" >&2; exit 1
	fi
	build >/dev/null
	mkdir -p "$dir/data" "$dir/logs"
	dir=$(cd "$dir" && pwd)
	if [ "$s3port" = 0 ]; then free_port; s3port=$port; fi
	if [ "$catport" = 0 ]; then free_port; catport=$port; fi
	used="$used$s3port $catport "
	# Every port is given explicitly: mini then fails instead of silently
	# moving to another port, and the gRPC ports (by default HTTP port +
	# 10000) cannot clash with another instance.
	local p=()
	for flag in master.port master.port.grpc volume.port volume.port.grpc \
		filer.port filer.port.grpc s3.port.grpc admin.port admin.port.grpc; do
		free_port; p+=("-$flag=$port")
	done
	# The credentials make mini enable S3 authentication with one admin
	# identity; without them it allows anonymous access to everything.
	# Telemetry is off so that nothing leaves the machine. WebDAV, the Lance
	# server and the admin's legacy port are not needed. S3_BUCKET and
	# S3_TABLE_BUCKET, if set, name buckets for mini to create at start-up.
	# The volume size and count are fixed (up to 16 GiB, grown 256 MiB at a
	# time) rather than sized from the disk, whose free space mini reserves
	# a whole volume of, seven at a time, before anything is written.
	(cd "$dir" && AWS_ACCESS_KEY_ID=$access_key AWS_SECRET_ACCESS_KEY=$secret_key \
		exec "$bin" -logdir="$dir/logs" mini -dir="$dir/data" \
		-ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false \
		-s3.port="$s3port" -s3.port.iceberg="$catport" -s3.port.lance=0 \
		-webdav=false -admin.port.legacy=0 "${p[@]}" \
		-master.volumeSizeLimitMB=256 -volume.max=64 \
		</dev/null >"$dir/log" 2>&1) &
	echo $! >"$dir/pid"
	# Ready once S3 answers at all (any status; requests without a signature
	# get 403) and mini has printed its banner, which comes after the
	# buckets named at start-up exist.
	local ok=
	for _ in $(seq 1 120); do
		if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then break; fi
		if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$s3port/" &&
			grep -q "All enabled components are running" "$dir/log"; then
			ok=1; break
		fi
		sleep 0.5
	done
	if [ -z "$ok" ]; then
		echo "SeaweedFS did not start; last lines of $dir/log:" >&2
		tail -20 "$dir/log" >&2
		stop "$dir"
		exit 1
	fi
	echo "S3=http://127.0.0.1:$s3port CATALOG=http://127.0.0.1:$catport REGION=$region ACCESS_KEY=$access_key SECRET_KEY=$secret_key"
}

stop() {
	local dir=${1:?data directory} pid
	[ -f "$dir/pid" ] || return 0
	pid=$(cat "$dir/pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 40); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$dir/pid"
}

cmd=${1:?build|path|start|stop}
case "$cmd" in
build)
	build
	;;
path)
	# Prints the binary's path if it is already built, fails otherwise.
	[ -x "$bin" ] && echo "$bin"
	;;
start)
	start "${2:-}" "${3:-}" "${4:-}"
	;;
stop)
	stop "${2:-}"
	;;
*)
	echo "usage: $0 build | path | start DIR [S3PORT] [CATALOGPORT] | stop DIR" >&2; exit 2 ;;
esac
