# Gauntlet — make targets. `make demo` and `make test` are the two set-up
# commands of the README.

GO      ?= go
BIN     := bin/gauntlet
TOOLS   := $(CURDIR)/bin/tools
DEMO    := .demo
ADDR    ?= 127.0.0.1:8080

.PHONY: all build demo test test-vet test-race test-exhaustive test-pg lint bench generate clean

all: build

# Stripped of symbols and local paths: a third smaller.
build:
	$(GO) build -trimpath -ldflags '-s -w' -o $(BIN) ./cmd/gauntlet

MOCK    ?= 127.0.0.1:8081

# The server with the example definitions (copied into .demo/ on first run
# so that edits made through the API never touch examples/) and the bundled
# mock model, so a full evaluation runs with no model installed. The mock
# speaks the three provider kinds' APIs, so the demo first runs a sweep of
# one model through each (openai/, anthropic/, gemini/: the same answers,
# side by side); the server then knows the three providers too. Ctrl-C
# stops both.
DEMO_PROVIDERS = --provider openai=openai,base_url=http://$(MOCK)/v1 \
	--provider anthropic=anthropic,base_url=http://$(MOCK),api_key_env=DEMO_KEY \
	--provider gemini=gemini,base_url=http://$(MOCK),api_key_env=DEMO_KEY
demo: build
	@mkdir -p $(DEMO)
	@[ -d $(DEMO)/definitions ] || cp -r examples/definitions $(DEMO)/definitions
	@[ -f $(DEMO)/definitions/pricing.yaml ] || cp examples/demo/pricing.yaml $(DEMO)/definitions/pricing.yaml
	@./$(BIN) mockllm --addr $(MOCK) --latency 150ms --jitter 300ms > $(DEMO)/mockllm.log 2>&1 & \
	mock=$$!; trap 'kill $$mock 2>/dev/null' EXIT INT TERM; \
	i=0; until grep -q '^http://' $(DEMO)/mockllm.log 2>/dev/null; do \
		if ! kill -0 $$mock 2>/dev/null || [ $$i -ge 50 ]; then \
			echo "make demo: the mock model did not start on $(MOCK) (another MOCK=host:port?):" >&2; \
			cat $(DEMO)/mockllm.log >&2; exit 1; fi; \
		i=$$((i+1)); sleep 0.1; done; \
	echo "mock model on http://$(MOCK)/v1 (log: $(DEMO)/mockllm.log)"; \
	export DEMO_KEY=mock; \
	./$(BIN) run --data $(DEMO)/data --definitions $(DEMO)/definitions --domains arithmetic \
		--llm-base-url http://$(MOCK)/v1 $(DEMO_PROVIDERS) \
		--model openai/llmtest-model --model anthropic/llmtest-model --model gemini/llmtest-model || true; \
	./$(BIN) serve --addr $(ADDR) --data $(DEMO)/data --definitions $(DEMO)/definitions \
		--llm-base-url http://$(MOCK)/v1 --llm-model llmtest-model $(DEMO_PROVIDERS)

# The packages that keep data run a second time on PostgreSQL: each test
# process starts a server of its own from Debian's postgresql package
# (skipped without it, failed under CI=1; see docs/scale-out.md). The
# browser tests stay on SQLite; of cmd/gauntlet only the migrate command's
# tests touch the database this way.
PG_PACKAGES := ./server ./harness/engine/... ./harness/catalog ./harness/runs ./harness/agent ./harness/store ./harness/internal/sqldb
# Of those, the packages whose PostgreSQL-only code runs goroutines of its
# own (River's queue, its workers and their heartbeats) run under the race
# detector there too; the others' code is the same on both databases, and
# the race pass has checked it on SQLite already.
PG_RACE_PACKAGES := ./harness/engine/...

# The race detector, less modernc.org/sqlite: the SQLite engine (C made
# Go) instrumented made every SQLite statement of the tests 3-4 times
# dearer, and a race inside that library is not one this project can
# find or fix. Our own code, and its calls into the library, are still
# checked.
RACE := -race -gcflags='modernc.org/sqlite/...=-race=false'

# A test binary's limit: far above what any package takes on a loaded
# 2-core machine, so that only a hung test reaches it.
TEST_TIMEOUT ?= 30m
TESTFLAGS ?=

# The race pass runs with -short: the tests below do less there (a sample
# of their cases, small bodies against lowered limits, or nothing when
# they start processes or builds), and
# test-exhaustive runs them whole without the race detector, which
# multiplies their cost several times over. A test that checks
# testing.Short() belongs in this list (internal/maketest checks it).
EXHAUSTIVE_TESTS := CountedTotalsMatchRows SearchIndexMatchesLike SyncIncrementalMatchesFresh \
	ReplaceImportSurvivesSIGKILL InterruptedRun \
	KitsCatchBrokenImplementations AsPlugin InitRefusesToOverwrite CompareExitStatus KnowledgeExampleEndToEnd \
	READMEKnowledgePath READMEDatasetPath READMEPricedRunPath SweepExitStatus ValidateExitStatus \
	WorkersShareARun WorkerKilled WorkerRefusesNewerSchema PostgresRestartedMidRun ResponseCacheOnWorkers \
	ServerRestartCancelsJobs StalledRunEnds StopCancelsJobs AgentRunsStayOnTheServer \
	RunBesideServe WorkerKilledDefaultFlags \
	KBDocuments KBSizeLimit SecretsNeverShown
EXHAUSTIVE_PACKAGES := ./harness/runs ./harness/catalog ./harness/engine ./harness/harnesstest \
	./examples/evaluator-plugin ./cmd/gauntlet ./server
# Of those, the packages of the PostgreSQL pass run them on PostgreSQL
# too; but the server's are about body sizes, not the database.
EXHAUSTIVE_PG_PACKAGES := $(filter-out ./server,$(filter $(PG_PACKAGES),$(EXHAUSTIVE_PACKAGES)))
empty :=
space := $(empty) $(empty)
EXHAUSTIVE_RUN := ^Test($(subst $(space),|,$(strip $(EXHAUSTIVE_TESTS))))$$

# make test runs every phase even when an earlier one fails (a failing
# race pass must not hide what PostgreSQL would have said), then fails
# naming the phases that failed. Each phase is a target of its own too.
# The race pass, which keeps both cores busy, runs alone; the exhaustive
# and PostgreSQL passes then run side by side, as both spend most of
# their time waiting (on child processes, PostgreSQL, a browser,
# deadlines), and each go test prints a package's output in one block.
TEST_PHASES := test-vet test-race test-exhaustive test-pg

test:
	@failed=; \
	$(MAKE) --no-print-directory test-vet || failed="$$failed test-vet"; \
	$(MAKE) --no-print-directory test-race || failed="$$failed test-race"; \
	$(MAKE) --no-print-directory test-exhaustive & exhaustive=$$!; \
	$(MAKE) --no-print-directory test-pg || failed="$$failed test-pg"; \
	wait $$exhaustive || failed="$$failed test-exhaustive"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed" >&2; exit 1; fi; \
	echo "make test: every phase passed ($(TEST_PHASES))"

test-vet:
	$(GO) vet ./...

# ./server first: the longest package starts first, and the short ones
# fill the other cores beside it. -parallel 4: four parallel tests of a
# package at once rather than one per core, and -p 3: three packages at
# once rather than one per core, as many tests wait on a browser, a child
# process, a socket or a deadline rather than compute (the plugin host's
# and the run store's tests take minutes of wall for seconds of CPU).
test-race:
	$(GO) test $(RACE) -short -p 3 -parallel 4 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) ./server ./...

# On SQLite and on PostgreSQL side by side: mostly waiting, both.
test-exhaustive:
	@rc=0; \
	(set -x; GAUNTLET_TEST_DATABASE=postgres $(GO) test -parallel 4 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -run '$(EXHAUSTIVE_RUN)' $(EXHAUSTIVE_PG_PACKAGES)) & pg=$$!; \
	(set -x; $(GO) test -parallel 4 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -run '$(EXHAUSTIVE_RUN)' $(EXHAUSTIVE_PACKAGES)) || rc=1; \
	wait $$pg || rc=1; \
	exit $$rc

test-pg:
	@rc=0; \
	(set -x; GAUNTLET_TEST_DATABASE=postgres $(GO) test -short -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -skip '^Test(Browser|Screenshot)' $(filter-out $(PG_RACE_PACKAGES),$(PG_PACKAGES))) & others=$$!; \
	(set -x; GAUNTLET_TEST_DATABASE=postgres $(GO) test $(RACE) -short -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $(PG_RACE_PACKAGES)) || rc=1; \
	wait $$others || rc=1; \
	(set -x; GAUNTLET_TEST_DATABASE=postgres $(GO) test $(RACE) -short -timeout $(TEST_TIMEOUT) $(TESTFLAGS) -run 'Migrate' ./cmd/gauntlet) || rc=1; \
	exit $$rc

# gofmt, go vet and staticcheck: the pinned version (v0.8.2 is release
# 2026.2.2, which knows Go 1.26), installed into bin/tools on first use or
# when the pin changes. A finding that is wrong for one line is silenced
# there with a //lint:ignore comment saying why; a check wrong for the
# whole project would be disabled in staticcheck.conf, with the reason.
STATICCHECK_VERSION := v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(TOOLS)/staticcheck -version 2>/dev/null | grep -qF '($(STATICCHECK_VERSION:v%=%))' || \
		GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(TOOLS)/staticcheck ./...

# Benchmarks print their figures; docs/performance.md records them.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 5x ./...

# The plugin protocol: harness/plugin/proto/*.proto → *.pb.go, committed.
# Installs Debian's protoc when it is missing and the pinned code
# generators into bin/tools, then runs every go:generate directive.
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2

generate:
	@command -v protoc >/dev/null 2>&1 || { \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get install -y protobuf-compiler || { $$sudo apt-get update && $$sudo apt-get install -y protobuf-compiler; }; }
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(TOOLS) $(GO) install $(PROTOC_GEN_GO_GRPC)
	PATH="$(TOOLS):$$PATH" $(GO) generate ./...

clean:
	rm -rf bin $(DEMO)
