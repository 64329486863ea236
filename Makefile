# Corral build and test targets. `make test` is the README's test command and what .ci/run runs.
GO        ?= go
PKGS      ?= ./...
TESTFLAGS ?= -count=1 -timeout 30m
# Tests build with the corraltesting tag: it compiles in the in-process test hooks (an apply
# delay, a lagging replica, a transaction step hook; package internal/testknobs) that the
# server binary (make build) leaves out. Without it, tests that need a hook skip.
TESTTAGS  ?= corraltesting

.PHONY: build build-testing deps test test-short test-race verify fuzz bench faults faults-soak robust-soak clean

build:
	CGO_ENABLED=0 $(GO) build -o bin/corral ./cmd/corral

# The same server built with -tags corraltesting: it also reads test knobs (an apply delay, lagging
# replicas) from CORRAL_TESTING_* environment variables (internal/testknobs). Never for
# production; `corral bench shards --delay` needs it (bin/corral-testing bench shards --delay 2ms).
# Tests need no make target: internal/corralproc builds its own tagged binary when a test asks for
# knobs.
build-testing:
	CGO_ENABLED=0 $(GO) build -tags corraltesting -o bin/corral-testing ./cmd/corral

# Debian packages the tests compare against: Apache ZooKeeper 3.8, its C client, kazoo, an MIT
# Kerberos KDC (tests/kerberos).
deps:
	./scripts/install-deps.sh

# Full suite: unit, transcript, in-process cluster, differential (against Apache ZooKeeper 3.8,
# installed by scripts/install-deps.sh when missing) and real-client tests.
test: build deps
	$(GO) test -tags $(TESTTAGS) $(TESTFLAGS) $(PKGS)

test-short:
	$(GO) test -short -tags $(TESTTAGS) $(TESTFLAGS) $(PKGS)

test-race:
	$(GO) test -race -short -tags $(TESTTAGS) $(TESTFLAGS) $(PKGS)

verify:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet $(PKGS)
	$(GO) vet -tags corraltesting $(PKGS)
	$(GO) vet -tags nobench ./cmd/corral/

# Fault tests over real processes (tests/fault; needs root for the iptables partitions, which
# are skipped without it). `make test` runs them too; `faults-soak` adds FAULT_RUNS randomized
# session-fault runs (pauses and partitions of a random server, docs/reliability.md).
FAULT_RUNS ?= 50
faults: build deps
	$(GO) test -tags $(TESTTAGS) -count=1 -timeout 30m -v ./tests/fault/

faults-soak: build deps
	CORRAL_FAULT_SOAK=$(FAULT_RUNS) $(GO) test -tags $(TESTTAGS) -count=1 -timeout 180m -v -run TestSessionFaultSoak ./tests/fault/

# Randomized robustness runs (tests/fault/robust_test.go): a random nemesis (pause, partitions,
# a shard leader's partition, a bridge, SIGKILL and restart, all servers killed, a slow disk), sometimes with
# a subtree move, a shard add or an observer added during it, under a mixed checked workload;
# CORRAL_ROBUST_SEED repeats a sequence, CORRAL_ROBUST_TARGET=zookeeper runs it against Apache
# ZooKeeper 3.8 (docs/reliability.md).
ROBUST_RUNS ?= 30
robust-soak: build deps
	CORRAL_ROBUST_SOAK=$(ROBUST_RUNS) $(GO) test -tags $(TESTTAGS) -count=1 -timeout 180m -v -run TestRobustnessSoak ./tests/fault/

# Run every native fuzz target for a short while.
FUZZTIME ?= 20s
FUZZPKGS ?= ./wire/ ./shard/ ./session/ ./tools/zkdata/ ./tools/backupfile/ ./sasl/ ./tlsconf/
fuzz:
	@for p in $(FUZZPKGS); do \
		for t in $$($(GO) test -list 'Fuzz.*' $$p | grep ^Fuzz); do \
			echo "== $$p $$t"; $(GO) test -run=^$$ -fuzz=^$$t$$ -fuzztime=$(FUZZTIME) $$p || exit 1; done; done

# A short default suite (a few minutes): every experiment in --short mode, Corral and Apache
# ZooKeeper side by side; results under ./bench-results/.
BENCH_EXPERIMENTS ?= throughput failover create barrier shards sizing
bench: build deps
	@for e in $(BENCH_EXPERIMENTS); do ./bin/corral bench $$e --target both --short || exit 1; done

clean:
	rm -rf bin data

# A container image FROM scratch holding only the static server binary, built without the
# benchmark suite and its plotting (-tags nobench: 30 MB instead of 38; deploy/Dockerfile;
# nothing is pulled). deploy/compose.yaml runs a 3-server ensemble from it (docs/operations.md,
# "Dashboards, alerts and containers").
IMAGE ?= corral:latest
.PHONY: image
image:
	@ctx=$$(mktemp -d) && trap 'rm -rf "$$ctx"' EXIT && \
		CGO_ENABLED=0 $(GO) build -tags nobench -o "$$ctx/corral" ./cmd/corral && mkdir "$$ctx/data" && \
		docker build -t $(IMAGE) -f deploy/Dockerfile "$$ctx"
