# quiver: two commands from a fresh clone.
#   make run   builds and starts the server on ./data/quiver.duckdb with demo data
#   make test  runs the tests
GO      ?= go
TAGS    := duckdb_arrow
BIN     := bin/quiver
BENCH   := bin/quiver-bench
export CGO_ENABLED := 1

# The version a build says it is (quiver version, /healthz, the Flight SQL
# server version, the MySQL handshake): git describe of the checkout, its
# commit, and the build's date. Outside git they stay empty and the
# binary says it was built outside git.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VPKG    := github.com/quiverdata/quiver/internal/version
LDFLAGS := -X $(VPKG).version=$(VERSION) -X $(VPKG).commit=$(COMMIT) -X $(VPKG).date=$(DATE)

.PHONY: dist dist-check notice service-check build run install test long-test race fuzz lint deps s3 bench bench-clients interop clean console-assets

# build makes the server and CLI, bin/quiver, and beside it the benchmark
# harness, bin/quiver-bench, which runs bin/quiver as its server.
build: console-assets
	$(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/quiver
	$(GO) build -tags $(TAGS) -ldflags "$(LDFLAGS)" -o $(BENCH) ./cmd/quiver-bench

# dist builds the release archives and their SHA-256 sums into dist/;
# dist-check unpacks the linux/amd64 one in a clean directory and runs
# quiver version and a serve/query round trip from it.
dist: console-assets
	@scripts/dist.sh "$(VERSION)" "$(LDFLAGS)"

dist-check:
	@scripts/dist.sh check

# notice rewrites THIRD_PARTY_NOTICES.md from the module graph.
notice:
	@scripts/notice.sh

# service-check verifies deploy/quiver.service with systemd-analyze,
# pointing it at the binary make build made.
service-check: build
	@d=$$(mktemp -d) && sed "s#/usr/local/bin/quiver#$$PWD/$(BIN)#" deploy/quiver.service >$$d/quiver.service && \
	out=$$(systemd-analyze verify $$d/quiver.service 2>&1); rm -rf $$d; \
	if [ -n "$$out" ]; then echo "$$out"; exit 1; fi; echo "deploy/quiver.service verified"

# console-assets installs the web console's libraries (apache-arrow and
# uPlot) from console/web's pinned lockfile with npm ci, into
# console/assets/vendor, which the binary embeds; once per lockfile.
console-assets:
	@scripts/console-assets.sh

run: build
	@mkdir -p data
	./$(BIN) serve --db ./data/quiver.duckdb --demo

# install puts quiver on the PATH: in $(PREFIX)/bin when PREFIX is given
# (make install PREFIX=/usr/local), else where go install would, Go's
# GOBIN or $(go env GOPATH)/bin. It says so when that is not on the PATH.
install: build
	@dir="$(if $(PREFIX),$(PREFIX)/bin,$$($(GO) env GOBIN))"; \
	[ -n "$$dir" ] || dir="$$($(GO) env GOPATH)/bin"; \
	mkdir -p "$$dir" && install -m 0755 $(BIN) "$$dir/quiver" || exit 1; \
	echo "installed $$dir/quiver"; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) echo "$$dir is not on your PATH: add it (export PATH=\"$$dir:\$$PATH\") to run quiver by name";; esac

# deps installs the Debian packages the tests drive: the mysql CLI and
# mysqldump, the MariaDB server the dump round trips restore into (its own
# service is stopped; the tests start servers of their own), and Chromium,
# the headless browser the web console's tests drive.
deps:
	@{ command -v mysqldump >/dev/null 2>&1 && { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; } && \
		command -v chromium >/dev/null 2>&1; } || { \
		echo "installing mariadb-client, mariadb-server (the mysql CLI and mysqldump tests) and chromium (the console's browser tests)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-client mariadb-server chromium >/dev/null && \
		{ service mariadb stop >/dev/null 2>&1 || true; }; }

# s3 builds the S3-compatible object store (SeaweedFS) the lake tests run
# as a process on 127.0.0.1, once; it is cached under ~/.cache/quiver.
s3:
	@scripts/seaweedfs.sh build >/dev/null

test: deps s3 console-assets
	$(GO) test -tags $(TAGS) -count=1 -timeout 20m ./...

# race runs the packages where concurrent requests share state under Go's
# race detector: admission, the memory pools, IPC, auth, the Flight SQL
# and MySQL servers, and the client.
race: deps s3 console-assets
	$(GO) test -race -tags $(TAGS) -count=1 -timeout 30m ./admit/ ./mempool/ ./ipcx/ ./auth/ ./flightsql/ ./mysqlwire/ ./client/

# fuzz runs each fuzz target that drives a live server for FUZZTIME:
# raw FlightData streams into DoPut and DoExchange. A failing input is
# saved under flightsql/testdata/fuzz/, where make test replays it.
FUZZTIME ?= 60s
fuzz:
	$(GO) test -tags $(TAGS) -run XXX -fuzz FuzzDoPut_Raw -fuzztime $(FUZZTIME) ./flightsql/
	$(GO) test -tags $(TAGS) -run XXX -fuzz FuzzDoExchange_Raw -fuzztime $(FUZZTIME) ./flightsql/

# long-test runs the slow checks: bounded memory while streaming 100M rows,
# 1,000 clients for 5 minutes with kills, slow readers and a restart,
# the 2M-message exactly-once Kafka test, the lake's kill -9 test on a real
# S3 server (read back with pyiceberg too when QUIVER_PYTHON names a Python
# that has it, as .ci/run does after make interop).
long-test: deps s3 console-assets
	QUIVER_LONG_TESTS=1 $(GO) test -tags $(TAGS) -count=1 -timeout 40m -run 'Long|ExactlyOnceKill9|LakeKill9' ./flightsql/ ./ingest/ ./bench/load/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...

# interop runs real clients against a fresh server: Python (ADBC, pandas,
# polars, pyarrow.flight, PyMySQL) and Java (Flight SQL JDBC, Connector/J).
# It installs .venv and the Maven dependencies on first use.
interop:
	bash interop/run.sh

clean:
	rm -rf bin

# bench reproduces the transport, fetch, ingest and Kafka tables on this
# machine (several minutes at the default sizes; BENCH_SIZES=1M for a
# quick pass). Results land in out/bench.
BENCH_SIZES ?= 1M,5M,10M
BENCH_REPS  ?= 3
bench: build deps
	@mkdir -p out/bench
	./$(BENCH) transport --reps $(BENCH_REPS) --json out/bench/transport.json --plot out/bench/transport.svg
	@dsn=$$(scripts/mariadb.sh start /tmp/quiver-mariadb 3307) && \
	./$(BENCH) fetch --protocols flight,mysql --mariadb "$$dsn" --sizes $(BENCH_SIZES) --reps $(BENCH_REPS) \
		--json out/bench/fetch.json --plot out/bench/fetch.svg; \
	status=$$?; scripts/mariadb.sh stop /tmp/quiver-mariadb; exit $$status
	./$(BENCH) ingest --reps $(BENCH_REPS) --json out/bench/ingest.json --plot out/bench/ingest.svg
	./$(BENCH) kafka --reps $(BENCH_REPS) --json out/bench/kafka.json --plot out/bench/kafka.svg

# bench-clients reproduces the tables of the clients users bring: pandas,
# JDBC and raw Java batches, and Parquet writers.
# They need .venv and interop/java's build: make interop makes both once.
bench-clients: build
	@[ -x .venv/bin/python ] && [ -f interop/java/target/bench-classpath.txt ] || \
		{ echo "bench-clients needs .venv and the Java build: run make interop once"; exit 1; }
	@mkdir -p out/bench
	./$(BENCH) pandas --sizes $(BENCH_SIZES) --reps $(BENCH_REPS) --json out/bench/pandas.json --plot out/bench/pandas.svg
	./$(BENCH) jdbc --reps $(BENCH_REPS) --json out/bench/jdbc.json --plot out/bench/jdbc.svg
	./$(BENCH) parquet --reps $(BENCH_REPS) --json out/bench/parquet.json --plot out/bench/parquet.svg
