# infscale build and test entry points. `make test` is the README's test command and what CI runs.
GO ?= go
BIN ?= bin/infscale

.PHONY: build test bench lint fuzz

build:
	$(GO) build -o $(BIN) ./cmd/recommender

test:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) test ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
