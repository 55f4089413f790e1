#!/usr/bin/env bash
# Start a throwaway PostgreSQL server on 127.0.0.1 for tests that need a SQL
# catalog, installing Debian's postgresql package first if needed.
#   scripts/postgres.sh start DIR [PORT]
#       prints POSTGRES=postgresql://quiver:quiver@127.0.0.1:PORT/quiver?sslmode=disable
#       PORT empty or 0 picks a free one. DIR holds the data directory
#       (DIR/data), the server's Unix socket and its log (DIR/log). Starting
#       a server that already runs in DIR prints its URL again.
#   scripts/postgres.sh stop DIR
# PostgreSQL refuses to run as root, so as root the server runs as the
# system user postgres (created if missing) and DIR is handed to it; DIR's
# parent directories must then be searchable by that user.
set -euo pipefail
db=quiver
user=quiver
password=quiver
cache=${QUIVER_CACHE:-${HOME:-/tmp}/.cache/quiver}

# bindir prints the newest /usr/lib/postgresql/<version>/bin that has the
# server binaries, or fails.
bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | while read -r b; do
		[ -x "$b/postgres" ] && [ -x "$b/initdb" ] && [ -x "$b/pg_ctl" ] && echo "$b"
	done | tail -1)
	[ -n "$d" ] && echo "$d"
}

install() {
	bindir >/dev/null && return
	mkdir -p "$cache"
	# One installation at a time; whoever waited finds it done.
	exec 9>"$cache/postgres-install.lock"
	flock 9
	if ! bindir >/dev/null; then
		echo "installing postgresql" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
		# The package may start a system service; the tests run their own.
		service postgresql stop >/dev/null 2>&1 || true
	fi
	exec 9>&-
	bindir >/dev/null || { echo "postgresql is installed but no server binaries under /usr/lib/postgresql/*/bin" >&2; exit 1; }
}

# as runs a command as the user that owns the server: postgres when root,
# else the caller.
as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# Ports are picked below 32768, out of Linux's ephemeral range.
free_port() {
	while :; do
		port=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return
		fi
	done
}

url() {
	echo "POSTGRES=postgresql://$user:$password@127.0.0.1:$1/$db?sslmode=disable"
}

start() {
	local dir=${1:?data directory} want=${2:-0} bin
	install
	bin=$(bindir)
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		useradd --system --user-group --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin postgres
	fi
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
	chmod 700 "$dir"
	if ! as test -w "$dir"; then
		echo "$dir is not writable by the server's user (are its parent directories searchable?)" >&2
		exit 1
	fi

	# Already running here: print its URL again.
	if [ -f "$dir/port" ] && as "$bin/pg_ctl" status -D "$dir/data" >/dev/null 2>&1; then
		local running
		running=$(cat "$dir/port")
		if [ "$want" != 0 ] && [ "$want" != "$running" ]; then
			echo "PostgreSQL already runs in $dir on port $running, not $want" >&2; exit 1
		fi
		url "$running"
		return
	fi

	if [ ! -f "$dir/data/PG_VERSION" ]; then
		# Local connections (the socket lives in DIR, which only the
		# server's user can enter) are trusted; TCP needs a password.
		as "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust \
			--auth-host=scram-sha-256 --encoding=UTF8 --locale=C \
			--no-sync --no-instructions >"$dir/initdb.log" 2>&1 || {
			echo "initdb failed:" >&2; cat "$dir/initdb.log" >&2; exit 1
		}
	fi

	# A port picked free can be taken before the server binds it; then
	# try another.
	local port ok= attempt
	for attempt in 1 2 3; do
		if [ "$want" = 0 ]; then free_port; else port=$want; fi
		# Only 127.0.0.1, the socket in DIR, and no durability: the
		# data is thrown away anyway.
		if as "$bin/pg_ctl" start -D "$dir/data" -l "$dir/log" -w -t 60 -s \
			-o "-c listen_addresses=127.0.0.1 -p $port -k '$dir' -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
			>/dev/null 2>&1; then
			ok=1; break
		fi
		[ "$want" = 0 ] || break
	done
	if [ -z "$ok" ]; then
		echo "PostgreSQL did not start; last lines of $dir/log:" >&2
		tail -20 "$dir/log" >&2 || true
		exit 1
	fi
	echo "$port" >"$dir/port"

	as "$bin/psql" -h "$dir" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 >/dev/null <<-SQL
		SELECT format('CREATE ROLE %I LOGIN PASSWORD %L', '$user', '$password')
		WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$user') \gexec
		SELECT format('CREATE DATABASE %I OWNER %I', '$db', '$user')
		WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$db') \gexec
	SQL
	# Ready once the URL's user gets in over TCP with its password.
	for _ in $(seq 1 60); do
		if PGPASSWORD=$password "$bin/psql" -h 127.0.0.1 -p "$port" -U "$user" -d "$db" \
			-qAt -c 'SELECT 1' >/dev/null 2>&1; then
			url "$port"
			return
		fi
		sleep 0.5
	done
	echo "PostgreSQL on port $port does not accept $user; last lines of $dir/log:" >&2
	tail -20 "$dir/log" >&2 || true
	stop "$dir"
	exit 1
}

stop() {
	local dir=${1:?data directory} bin pid
	[ -f "$dir/data/postmaster.pid" ] || return 0
	if bin=$(bindir) && as "$bin/pg_ctl" stop -D "$dir/data" -m fast -w -t 30 -s >/dev/null 2>&1; then
		rm -f "$dir/port"
		return 0
	fi
	# pg_ctl failed (or is gone): kill the postmaster it recorded.
	pid=$(head -1 "$dir/data/postmaster.pid" 2>/dev/null || true)
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 40); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$dir/port"
}

cmd=${1:?start|stop}
case "$cmd" in
start)
	start "${2:-}" "${3:-}"
	;;
stop)
	stop "${2:-}"
	;;
*)
	echo "usage: $0 start DIR [PORT] | stop DIR" >&2; exit 2 ;;
esac
