# quiver: two commands from a fresh clone.
#   make run   builds and starts the server on ./data/quiver.duckdb with demo data
#   make test  runs the tests
GO      ?= go
TAGS    := duckdb_arrow
BIN     := bin/quiver
export CGO_ENABLED := 1

.PHONY: build run test long-test lint deps bench interop clean

build:
	$(GO) build -tags $(TAGS) -o $(BIN) ./cmd/quiver

run: build
	@mkdir -p data
	./$(BIN) serve --db ./data/quiver.duckdb --demo

# deps installs the Debian packages the tests drive (the mysql CLI).
deps:
	@command -v mysql >/dev/null 2>&1 || { \
		echo "installing mariadb-client (for the mysql CLI tests)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-client >/dev/null; }

test: deps
	$(GO) test -tags $(TAGS) -count=1 -timeout 20m ./...

# long-test runs the slow checks: bounded memory while streaming 100M rows,
# the 2M-message exactly-once Kafka test.
long-test: deps
	QUIVER_LONG_TESTS=1 $(GO) test -tags $(TAGS) -count=1 -timeout 40m -run 'Long' ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags $(TAGS) ./...

clean:
	rm -rf bin
