# The two commands of the README: `make demo` and `make test`.
GO ?= go
# Every package runs under the race detector (about 4 minutes on 2 cores)
# except the pgx suite (internal/pgxsuite), which runs pgx's own tests
# through the proxy and is long: it runs once, without -race.
SUITE_PKG = github.com/shardgate/shardgate/internal/pgxsuite

.PHONY: demo test deps vet build bench fmt

# deps also says, before the first build, that compiling the SQL parser
# takes minutes (scripts/build-note.sh).
deps:
	@bash scripts/ensure-deps.sh
	@GO=$(GO) bash scripts/build-note.sh

build: deps
	$(GO) build -o bin/shardgate ./cmd/shardgate

# make demo STANDBYS=1: one streaming standby of each cluster too.
demo: build
	./bin/shardgate demo $(if $(filter 1 yes true,$(STANDBYS)),--standbys)

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; $(GO) mod tidy -diff; exit 1; }

test: deps vet
	$(GO) test -race -count=1 -timeout 30m $$($(GO) list ./... | grep -vx '$(SUITE_PKG)')
	$(GO) test -count=1 -timeout 30m $(SUITE_PKG)

bench: build
	WITH_BENCH=1 bash scripts/ensure-deps.sh
	bash bench/run.sh

fmt:
	gofmt -w $$(git ls-files '*.go')
