# infscale build and test entry points. `make test` is the README's test command and what CI runs.
GO ?= go
BIN ?= bin/infscale

.PHONY: build image test cross deadcode test-deploy test-chart test-keda test-kube test-race bench matrix heldout lint fuzz tools

# The revision is linked in too (as the image does): go stamps vcs.revision
# only in a checkout whose .git is a directory, not in a git worktree.
build:
	$(GO) build -ldflags "-X main.buildRevision=$(REVISION)" -o $(BIN) ./cmd/recommender

# The container image (Dockerfile) built by the first of docker (with
# BuildKit), podman or buildah on PATH, or CONTAINER_TOOL; all three take the
# same `build --build-arg -t` and the Dockerfile's RUN --mount caches and
# BUILDPLATFORM/TARGETOS/TARGETARCH. Needs pulls of golang:$(GO_IMAGE_VERSION)
# and gcr.io/distroless/static-debian12:nonroot, and the Go module proxy
# during the build.
CONTAINER_TOOL ?= $(firstword $(foreach t,docker podman buildah,$(if $(shell command -v $(t) 2>/dev/null),$(t))))
IMAGE ?= infscale/infscale:latest
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
GO_IMAGE_VERSION ?= 1.26

image:
	@test -n "$(CONTAINER_TOOL)" || { echo >&2 "make image: none of docker, podman or buildah is on PATH (or set CONTAINER_TOOL)"; exit 1; }
	DOCKER_BUILDKIT=1 $(CONTAINER_TOOL) build --build-arg GO_VERSION=$(GO_IMAGE_VERSION) --build-arg VERSION=$(VERSION) \
		--build-arg REVISION=$(REVISION) --build-arg CREATED=$$(date -u +%Y-%m-%dT%H:%M:%SZ) \
		-t $(IMAGE) .

# The real Prometheus server and promtool the tests start (internal/promtest),
# pinned in the separate tools module at the version the main module imports,
# built without service discovery (Prometheus's remove_all_sd build tag keeps
# static, file and http SD: what the tests use) to skip compiling the cloud
# SDKs (internal/promtest builds with the same tags).
PROMETHEUS_TAGS ?= remove_all_sd
tools:
	$(GO) build -C tools -tags $(PROMETHEUS_TAGS) -o bin/prometheus github.com/prometheus/prometheus/cmd/prometheus
	$(GO) build -C tools -tags $(PROMETHEUS_TAGS) -o bin/promtool github.com/prometheus/prometheus/cmd/promtool

# Test harnesses built only under these tags, so that the binary does not
# link them: pkg/replay's HPA consumer on given steps, for deploy/kubee2e.
HARNESS_TAGS ?= replayharness

test: tools deadcode cross test-deploy test-chart test-keda test-kube test-race
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	INFSCALE_PROMETHEUS=$(CURDIR)/tools/bin/prometheus INFSCALE_PROMTOOL=$(CURDIR)/tools/bin/promtool $(GO) test ./...
	$(GO) vet -tags $(HARNESS_TAGS) ./pkg/replay
	$(GO) test -tags $(HARNESS_TAGS) -run HPAReplicas ./pkg/replay

# The race detector over serve (the decision loop beside the reads,
# /metrics, reloads, tuning workers, leader election, the state dir) and
# pkg/kube (the Lease elector beside the writes it fences). About 7 minutes
# on 2 idle cores (pkg/serve 392 s, its tuner's replays the most of it), over
# go test's default 10-minute limit beside other builds: hence -timeout 20m
# (a hang still ends the run well inside CI's limit). The activator is raced by hand
# (`go test -race ./pkg/activator`, race-free): its tests time TCP closes
# against a reader, and the race runtime's slowness failed 2 of about 6 runs
# (not races). cmd/recommender takes 17 minutes under -race.
test-race: tools
	INFSCALE_PROMETHEUS=$(CURDIR)/tools/bin/prometheus INFSCALE_PROMTOOL=$(CURDIR)/tools/bin/promtool $(GO) test -race -timeout 20m ./pkg/serve ./pkg/kube

# The binary builds for a platform besides Linux (simulate, backtest and tune
# on a laptop): a Linux-only call in an untagged file (syscall.Getrusage once)
# fails here, not on a user's machine. Windows lacks the most of Linux's
# calls, so it stands for macOS too by default; about 3.5 minutes on a cold
# cache each (CROSS_PLATFORMS="darwin/arm64 windows/amd64" for both).
CROSS_PLATFORMS ?= windows/amd64
cross:
	@for p in $(CROSS_PLATFORMS); do echo "go build ./cmd/recommender for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -o /dev/null ./cmd/recommender || exit 1; done

# No function of the main module unreachable from the binary outside the
# test harnesses: deadcode (golang.org/x/tools, pinned in the test-only tools
# module) run by tools/deadcode_test.go, which lists the harnesses and the
# entries still pending (about a minute of CPU); tools/fuzztargets_test.go
# checks FUZZ_TARGETS below names every fuzz target by its package.
deadcode:
	$(GO) -C tools vet .
	$(GO) -C tools test -count=1 .

# deploy/ manifests decoded strictly into their owners' Go types (KEDA,
# prometheus-operator, kustomize), and deploy/zero's held query evaluated in
# the pinned promtool: a separate test-only module, deploy/test.
test-deploy: tools
	$(GO) -C deploy/test vet ./...
	INFSCALE_PROMTOOL=$(CURDIR)/tools/bin/promtool $(GO) -C deploy/test test ./...

# The Helm chart (deploy/chart/infscale) rendered with Helm's Go library,
# every object decoded strictly, checked against deploy/base and deploy/keda
# (deploy/charttest, its own module: Helm stays out of the main module).
test-chart:
	$(GO) -C deploy/charttest vet ./...
	$(GO) -C deploy/charttest test ./...

# KEDA's own prometheus scaler against the pinned Prometheus (deploy/kedae2e,
# its own module: KEDA's scalers package builds 287 modules; minutes the
# first time, seconds from the build cache).
test-keda: tools
	$(GO) -C deploy/kedae2e vet ./...
	INFSCALE_PROMETHEUS=$(CURDIR)/tools/bin/prometheus $(GO) -C deploy/kedae2e test ./...

# infscale against a real kube-apiserver (k8s.io/kubernetes' test server on
# an embedded etcd, loopback only; deploy/kubee2e, its own module: the API
# server's build list is 148 modules, ~2,200 packages; docs/evaluation/PERFORMANCE.md
# gives its cold build and run times).
test-kube:
	$(GO) -C deploy/kubee2e vet -tags $(HARNESS_TAGS) ./...
	$(GO) -C deploy/kubee2e test -tags $(HARNESS_TAGS) ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The generalization matrix every decision change is judged on: the default
# policy set and fixed:1..6 on 21 traces and 6 replicas, rewriting
# docs/evaluation/recommended.md (about 2 minutes of wall time on 2 cores;
# MATRIX_WORKERS cells at once), then failing on each goal missed (the
# page lists them too). A plain `go test ./pkg/replay` replays three of its cells and checks the page holds
# their figures; -matrix-only REGEXP replays a few cells and fails on theirs.
MATRIX_WORKERS ?= 2
matrix:
	$(GO) test ./pkg/replay -run '^TestMatrix$$' -count=1 -timeout 0 -v -update -matrix-workers $(MATRIX_WORKERS)

# The held-out cells (the matrix's five uncalibrated replicas and six others
# on 15 traces the matrix does not hold; docs/evaluation/recommended.md,
# "Held-out cells"), recommended only: SAVE=FILE
# keeps the figures, AGAINST=FILE compares with a kept run both ways (each
# changed cell, each cell of the file not run now, then the replica-minutes
# ratio and the change in misses; compared before saving, so both may name
# one file). Both files are checked before the replay (a file with no cells
# is refused). TRACES="FILE[@X] ..." adds your own traces (as --trace takes
# them, burstgpt:FILE too, @X a rate scale) as rows on every held-out
# replica, each read through before the replay. Seconds of CPU.
heldout:
	$(GO) test ./pkg/replay -run '^TestMatrix$$' -count=1 -timeout 0 -v -matrix-only . -matrix-heldout \
		-matrix-policies recommended $(if $(SAVE),-matrix-save $(abspath $(SAVE))) $(if $(AGAINST),-matrix-against $(abspath $(AGAINST))) \
		$(foreach t,$(TRACES),-matrix-trace $(call heldout_trace,$(t)))

# heldout_trace makes TRACES' FILE[@X] absolute (go test runs in
# pkg/replay), after a format prefix (burstgpt:FILE@X); a synthetic spec or
# a missing file is passed as given.
heldout_prefix = $(if $(filter azure:% burstgpt:% mooncake:% csv:%,$(1)),$(firstword $(subst :, ,$(1))):)
heldout_abs = $(1)$(if $(wildcard $(firstword $(subst @, ,$(2)))),$(abspath $(2)),$(2))
heldout_trace = $(call heldout_abs,$(call heldout_prefix,$(1)),$(patsubst $(call heldout_prefix,$(1))%,%,$(1)))

# Every decoder of a file a user gives (page, configuration, behavior,
# state, trace, calibration, config.json), of flag values with a syntax of
# their own (synthetic traces, sizes, --shard, --schedule windows), of
# Prometheus's answers and of the activator's upstream bytes, and the
# query validator, FUZZTIME each (go test runs only their seed corpora).
# `go test -fuzz` takes one target per run.
FUZZTIME ?= 30s
FUZZ_TARGETS = ./pkg/scrape:FuzzRead ./pkg/config:FuzzParse ./pkg/config:FuzzDecodeBehavior \
	./pkg/statefile:FuzzDecode ./pkg/serve:FuzzStoreLoad ./pkg/trace:FuzzReaders \
	./pkg/promql:FuzzValidate ./pkg/replay:FuzzParsePolicy ./pkg/recommend:FuzzDecide \
	./pkg/replica:FuzzParseHFConfig ./pkg/replica:FuzzLoadCalibration ./pkg/trace:FuzzSynthetic \
	./cmd/recommender:FuzzFlagValues ./pkg/promql:FuzzAnswers ./pkg/promql:FuzzDecodeVector \
	./pkg/activator:FuzzFrameScan ./pkg/activator:FuzzHealthStatus ./pkg/activator:FuzzCheckPath \
	./pkg/recommend:FuzzSchedule ./internal/sourcekey:FuzzCanonicalURL ./pkg/backtest:FuzzFetch

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; fn=$${t#*:}; \
		echo "fuzz $$fn ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
