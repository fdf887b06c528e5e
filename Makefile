# The two commands of the README: `make demo` and `make test`.
GO ?= go
# Packages without heavy cgo get the race detector; the rest run plainly.
RACE_PKGS = ./topology/... ./internal/testenv/... ./examples/...

.PHONY: demo test deps vet build bench fmt

deps:
	@bash scripts/ensure-deps.sh

build: deps
	$(GO) build -o bin/shardgate ./cmd/shardgate

demo: build
	./bin/shardgate demo

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

test: deps vet
	$(GO) test -race -count=1 $(RACE_PKGS)
	$(GO) test -count=1 -timeout 30m ./...

bench: build
	WITH_BENCH=1 bash scripts/ensure-deps.sh
	bash bench/run.sh

fmt:
	gofmt -w $$(git ls-files '*.go')
