#!/usr/bin/env bash
# Start a throwaway MariaDB server on 127.0.0.1 for `quiver-bench fetch
# --mariadb`, installing Debian's mariadb-server first if needed.
#   scripts/mariadb.sh start DIR PORT   prints HOST:PORT:USER:PASSWORD
#   scripts/mariadb.sh stop DIR
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?data directory}; port=${3:-3307}

case "$cmd" in
start)
	if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
		echo "installing mariadb-server" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server mariadb-client >/dev/null
		# The package starts a system service; the bench uses its own.
		service mariadb stop >/dev/null 2>&1 || true
	fi
	mkdir -p "$dir"
	if [ ! -d "$dir/data/mysql" ]; then
		mariadb-install-db --user=root --datadir="$dir/data" --auth-root-authentication-method=normal >/dev/null
	fi
	/usr/sbin/mariadbd --user=root --datadir="$dir/data" --socket="$dir/sock" \
		--bind-address=127.0.0.1 --port="$port" --pid-file="$dir/pid" \
		--skip-name-resolve --innodb-buffer-pool-size=2G --max-allowed-packet=256M \
		--local-infile=1 >"$dir/log" 2>&1 &
	for _ in $(seq 1 60); do
		mysqladmin --socket="$dir/sock" -uroot ping >/dev/null 2>&1 && break
		sleep 1
	done
	mysql --socket="$dir/sock" -uroot -e "
		CREATE DATABASE IF NOT EXISTS quiver_bench;
		CREATE USER IF NOT EXISTS 'bench'@'127.0.0.1' IDENTIFIED BY 'bench';
		GRANT ALL ON quiver_bench.* TO 'bench'@'127.0.0.1';"
	echo "127.0.0.1:$port:bench:bench"
	;;
stop)
	if [ -f "$dir/pid" ]; then kill "$(cat "$dir/pid")" 2>/dev/null || true; fi
	;;
*)
	echo "usage: $0 start|stop DIR [PORT]" >&2; exit 2 ;;
esac
