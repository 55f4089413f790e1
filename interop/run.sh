#!/usr/bin/env bash
# interop/run.sh — real clients against a real quiver (`make interop`).
#
#   1. builds bin/quiver and bin/quiver-bench;
#   2. installs .venv from interop/python/requirements.txt (skipped while the
#      requirements' hash matches .venv's stamp);
#   3. resolves interop/java/pom.xml with Maven (offline while the pom's hash
#      matches its stamp);
#   4. resolves Spark's jars (interop/lake/pom.xml: the Iceberg Spark runtime
#      and the SQLite JDBC driver) into the local Maven repository, for the
#      Python suite (offline while the pom's hash matches its stamp);
#   5. makes an Iceberg lake with interop/lake/lakegen: an in-process Kafka
#      and two `bin/quiver ingest --lake` processes of one group;
#   6. makes a second lake for the replicas, partitioned by hour so that it
#      always has at least six data files (both suites use it);
#   7. installs Debian's mariadb-client when the mysql CLI is missing;
#   8. makes a throw-away TLS certificate with openssl;
#   9. starts three fresh servers on free loopback ports, each with a user: a
#      plain one (Flight, MySQL, HTTP), a TLS one (Flight only), and one
#      whose default result compression is zstd (Flight, HTTP); then three
#      replicas serving the replicas' lake, each listing the others as peers;
#  10. runs the Python suite (pytest) and the Java suite (JUnit 5), both
#      always, restarting a replica the Python suite killed before the Java
#      suite runs, and stops the servers whatever happens;
#  11. runs the benchmark page's `quiver-bench pandas`, `jdbc` and `parquet`
#      commands as written, at smoke size, through their Go test (each
#      starts its own server, and needs the Java build and .venv made
#      above); a suite that fails fails the run.
#
# The suites find the servers in QUIVER_FLIGHT, QUIVER_MYSQL, QUIVER_HTTP,
# QUIVER_USER, QUIVER_PASSWORD, QUIVER_TLS_FLIGHT, QUIVER_TLS_CA,
# QUIVER_ZSTD_FLIGHT and QUIVER_ZSTD_HTTP; the Python suite finds the lake in
# QUIVER_LAKE_DIR, QUIVER_LAKE_MESSAGES, QUIVER_LAKE_PARTITIONS and
# QUIVER_LAKE_GROUP, and Spark's jars in QUIVER_SPARK_JARS. Both suites find
# the replicas in QUIVER_REPLICAS (their Flight addresses, comma-separated),
# QUIVER_REPLICA_PIDS (their process ids, in the same order, for a test that
# kills one) and QUIVER_REPLICA_MESSAGES (the rows of lake.quiver.events,
# ids 0..N-1); QUIVER_REPLICAS is unset when the replicas' lake failed.
#
# Environment: PYTHON (default python3), MVN (default mvn), GO (default go),
# PYTEST_ARGS and MVN_ARGS (extra arguments, e.g. PYTEST_ARGS="-k ingest"),
# INTEROP_ONLY (python or java, to run one suite).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PYTHON=${PYTHON:-python3}
MVN=${MVN:-mvn}
GO=${GO:-go}
venv=$root/.venv
reqs=$root/interop/python/requirements.txt
pom=$root/interop/java/pom.xml
spark_pom=$root/interop/lake/pom.xml

t0=$(date +%s)
step() { echo; echo "== interop: $* ($(( $(date +%s) - t0 ))s)"; }
die() { echo "interop: $*" >&2; exit 1; }
fingerprint() { sha256sum | cut -c1-16; }

work=$(mktemp -d "${TMPDIR:-/tmp}/quiver-interop.XXXXXX")
pids=()
cleanup() {
	local rc=$?
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		# A server drains for at most a few seconds; then it is killed.
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [ "$rc" -ne 0 ]; then
		for log in "$work"/*.log; do
			[ -f "$log" ] || continue
			echo "--- last lines of $(basename "$log")"
			tail -n 30 "$log"
		done
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "build"
${MAKE:-make} --no-print-directory build

step "python environment"
want=$({ cat "$reqs"; command -v "$PYTHON"; "$PYTHON" --version 2>&1; } | fingerprint)
stamp=$venv/.interop-stamp
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
	echo "installing $(basename "$reqs") into $venv"
	"$PYTHON" -m venv --clear "$venv"
	"$venv/bin/python" -m pip install --disable-pip-version-check -q --only-binary=:all: -r "$reqs"
	echo "$want" > "$stamp"
else
	echo "$venv is up to date"
fi

if [ "${INTEROP_ONLY:-java}" = java ]; then
	step "java dependencies"
	command -v "$MVN" >/dev/null || die "maven ($MVN) is not installed: apt-get install maven"
	mvn_stamp=$root/interop/java/target/.interop-stamp
	mvn_want=$(fingerprint < "$pom")
	mvn_mode=()
	if [ "$(cat "$mvn_stamp" 2>/dev/null)" = "$mvn_want" ]; then
		mvn_mode=(-o)
		echo "using the local Maven repository (offline)"
	else
		# test-compile resolves the dependencies; surefire's JUnit provider
		# is resolved by the first test run below, after which the stamp
		# is written.
		"$MVN" -B -q -ntp -f "$pom" test-compile
	fi
fi

failed=()
if [ "${INTEROP_ONLY:-python}" = python ]; then
	step "spark jars"
	command -v "$MVN" >/dev/null || die "maven ($MVN) is not installed: apt-get install maven"
	spark_target=$root/interop/lake/target
	spark_stamp=$spark_target/.interop-stamp
	spark_cp=$spark_target/classpath.txt
	spark_want=$(fingerprint < "$spark_pom")
	spark_jars=''
	if [ "$(cat "$spark_stamp" 2>/dev/null)" = "$spark_want" ] && [ -s "$spark_cp" ]; then
		spark_jars=$(cat "$spark_cp")
		for jar in ${spark_jars//,/ }; do
			[ -f "$jar" ] || { spark_jars=''; break; }
		done
	fi
	if [ -n "$spark_jars" ]; then
		echo "using the local Maven repository (resolved before)"
	else
		mkdir -p "$spark_target"
		rm -f "$spark_stamp"
		"$MVN" -B -q -ntp -f "$spark_pom" dependency:build-classpath \
			-Dmdep.outputFile="$work/spark-classpath.txt" -Dmdep.pathSeparator=,
		spark_jars=$(cat "$work/spark-classpath.txt")
		echo "$spark_jars" > "$spark_cp"
		echo "$spark_want" > "$spark_stamp"
	fi
	export QUIVER_SPARK_JARS=$spark_jars
	echo "${spark_jars//,/ }" | tr ' ' '\n' | sed 's|.*/||'

	step "lake (quiver ingest --lake)"
	export QUIVER_LAKE_DIR=$work/lake QUIVER_LAKE_MESSAGES=20000 QUIVER_LAKE_PARTITIONS=4 QUIVER_LAKE_GROUP=interop
	if "$GO" build -o "$work/lakegen" ./interop/lake/lakegen &&
		"$work/lakegen" -quiver "$root/bin/quiver" -proto "$root/interop/lake/events.proto" \
			-dir "$QUIVER_LAKE_DIR" -logs "$work" -messages "$QUIVER_LAKE_MESSAGES" \
			-partitions "$QUIVER_LAKE_PARTITIONS" -procs 2 -group "$QUIVER_LAKE_GROUP"; then
		:
	else
		# The lake tests then fail on the missing lake; the other suites run.
		echo "interop: making the lake failed (the ingest logs follow at the end)" >&2
		failed+=(lake)
		export QUIVER_LAKE_DIR=''
	fi
fi

step "replicas' lake (quiver ingest --lake, hourly partitions)"
# The replicas split a scan into one endpoint per group of data files, so
# the suites' ">= 4 endpoints" needs >= 4 files. The lake above has as few
# as two (one per day) when one process happens to export everything at
# once; this one has one file per hour at least, and its 20000 messages
# span six hours.
replica_lake=$work/replica-lake replica_messages=20000
if [ -x "$work/lakegen" ] || "$GO" build -o "$work/lakegen" ./interop/lake/lakegen; then
	if "$work/lakegen" -quiver "$root/bin/quiver" -proto "$root/interop/lake/events.proto" \
		-dir "$replica_lake" -logs "$work/replica-lakegen" -messages "$replica_messages" \
		-partitions 4 -procs 1 -group replicas -partition-by 'hour(_timestamp)'; then
		echo "$(find "$replica_lake" -name '*.parquet' | wc -l) data files in $replica_lake"
	else
		echo "interop: making the replicas' lake failed" >&2
		failed+=(replica-lake)
		replica_lake=''
	fi
else
	failed+=(replica-lake)
	replica_lake=''
fi

step "mysql client"
if ! command -v mysql >/dev/null 2>&1; then
	echo "installing mariadb-client"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-client >/dev/null
fi
mysql --version

step "tls certificate"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
echo "self-signed certificate for 127.0.0.1 in $work/tls.crt"

export QUIVER_USER=interop
QUIVER_PASSWORD="interop-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
export QUIVER_PASSWORD

# start_server NAME LAST ARGS... starts `quiver serve` with a user, waits
# until it announces LAST, the last of its listeners (the server starts
# them in the order flight, mysql, http), and sets addr_flight, addr_mysql
# and addr_http from the lines it printed (empty when not announced).
start_server() {
	local name=$1 last=$2; shift 2
	local log=$work/$name.log
	bin/quiver serve --user "$QUIVER_USER" --password "$QUIVER_PASSWORD" --log-level warn "$@" 2>"$log" >&2 &
	local pid=$!
	pids+=("$pid")
	addr_flight='' addr_mysql='' addr_http=''
	for _ in $(seq 600); do
		kill -0 "$pid" 2>/dev/null || die "server $name exited before it was ready (see its log below)"
		if grep -q "^quiver: $last listening on " "$log"; then
			addr_flight=$(sed -n 's/^quiver: flight listening on //p' "$log")
			addr_mysql=$(sed -n 's/^quiver: mysql listening on //p' "$log")
			addr_http=$(sed -n 's/^quiver: http listening on //p' "$log")
			[ -n "$addr_flight" ] || die "server $name did not announce its flight listener"
			echo "server $name (pid $pid): flight $addr_flight, mysql ${addr_mysql:-none}, http ${addr_http:-none}"
			return 0
		fi
		sleep 0.1
	done
	die "server $name did not announce its $last listener within 60 s"
}

step "start servers"
start_server plain http --db "$work/plain/interop.duckdb" --flight 127.0.0.1:0 --mysql 127.0.0.1:0 --http 127.0.0.1:0
export QUIVER_FLIGHT=$addr_flight QUIVER_MYSQL=$addr_mysql QUIVER_HTTP=$addr_http
if [ -z "$QUIVER_MYSQL" ]; then
	echo "WARNING: quiver serve --mysql 127.0.0.1:0 announced no mysql listener (the MySQL-protocol" \
		"endpoint is not live in this build); the PyMySQL, mysql CLI and Connector/J tests will fail" >&2
fi
start_server tls flight --db :memory: --flight 127.0.0.1:0 --mysql "" --http "" \
	--tls-cert "$work/tls.crt" --tls-key "$work/tls.key"
export QUIVER_TLS_FLIGHT=$addr_flight QUIVER_TLS_CA=$work/tls.crt
start_server zstd http --db :memory: --flight 127.0.0.1:0 --mysql "" --http 127.0.0.1:0 --compression zstd
export QUIVER_ZSTD_FLIGHT=$addr_flight QUIVER_ZSTD_HTTP=$addr_http

# Three replicas of one lake. Each advertises its fixed address and lists
# the other two, so every endpoint of a split scan names all three; they
# share the user, the password and the token key, so a bearer token from
# one is good at the others. Their ports are picked before they start
# (each must know the others'), by binding port 0 and letting go of it.
replica_addrs=() replica_pids=()
# start_replica I starts replica I on replica_addrs[I], again after it died.
start_replica() {
	local i=$1 peers=() a
	for a in "${replica_addrs[@]}"; do
		[ "$a" = "${replica_addrs[$i]}" ] || peers+=("$a")
	done
	start_server "replica$i" flight --db :memory: --flight "${replica_addrs[$i]}" --mysql "" --http "" \
		--lake "file://$replica_lake" --lake-part-mb 0.02 \
		--advertise "${replica_addrs[$i]}" --peers "$(IFS=,; echo "${peers[*]}")" --token-key "$replica_key"
	replica_pids[i]=${pids[-1]}
	QUIVER_REPLICA_PIDS=$(IFS=,; echo "${replica_pids[*]}")
	export QUIVER_REPLICA_PIDS
}
# restart_dead_replicas starts again, on the same address, every replica
# that is no longer running (a test killed it).
restart_dead_replicas() {
	local i pid p keep=()
	for i in "${!replica_pids[@]}"; do
		pid=${replica_pids[$i]}
		kill -0 "$pid" 2>/dev/null && continue
		wait "$pid" 2>/dev/null || true
		for p in "${pids[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
		pids=("${keep[@]}") keep=()
		echo "replica$i (pid $pid) is gone; starting it again"
		mv "$work/replica$i.log" "$work/replica$i-killed.log"
		start_replica "$i"
	done
}
if [ -n "$replica_lake" ]; then
	read -r -a replica_ports < <("$PYTHON" -c '
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
	[ "${#replica_ports[@]}" -eq 3 ] || die "could not pick three free ports for the replicas"
	for port in "${replica_ports[@]}"; do replica_addrs+=("127.0.0.1:$port"); done
	replica_key=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
	for i in 0 1 2; do start_replica "$i"; done
	QUIVER_REPLICAS=$(IFS=,; echo "${replica_addrs[*]}")
	export QUIVER_REPLICAS QUIVER_REPLICA_MESSAGES=$replica_messages
fi

export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ in the work tree
if [ "${INTEROP_ONLY:-python}" = python ]; then
	step "python suite (pytest)"
	# shellcheck disable=SC2086
	"$venv/bin/python" -m pytest -p no:cacheprovider -ra "$root/interop/python" ${PYTEST_ARGS:-} || failed+=(python)
fi
if [ "${INTEROP_ONLY:-java}" = java ]; then
	[ -z "$replica_lake" ] || restart_dead_replicas
	step "java suite (JUnit 5)"
	# shellcheck disable=SC2086
	"$MVN" -B -ntp "${mvn_mode[@]}" -f "$pom" test ${MVN_ARGS:-} || failed+=(java)
	# Every dependency and plugin has been resolved once the tests ran.
	if [ -d "$root/interop/java/target/surefire-reports" ]; then
		echo "$mvn_want" > "$mvn_stamp"
	fi
fi

# The benchmark page's commands of the suites that need .venv and the Java
# build, run as written at smoke size by their Go test (make test skips
# them, having neither); each starts its own server.
case "${INTEROP_ONLY:-}" in
python) bench_suites=pandas ;;
java) bench_suites='jdbc|parquet' ;;
*) bench_suites='pandas|jdbc|parquet' ;;
esac
step "benchmark page commands ($bench_suites, as written, at smoke size)"
QUIVER_REQUIRE_INTEROP=1 QUIVER_BIN=$root/bin/quiver QUIVER_BENCH_BIN=$root/bin/quiver-bench \
	"$GO" test -tags duckdb_arrow -count=1 -run "TestBenchPage_CommandsRun/($bench_suites)\$" ./cmd/quiver-bench/ || failed+=(bench-page)

step "done"
if [ "${#failed[@]}" -gt 0 ]; then
	die "failed suites: ${failed[*]}"
fi
echo "interop: all suites passed"
