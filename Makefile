GO ?= go

.PHONY: test test-timed test-pg vet race browser adapters mutation-fast mutation-runner mutation mutation-full bench bench-pg example fuzz

## test: what CI runs (inside .ci/with-postgres) — gofmt and vet (the default build and
## the bkmutate build), every test under the race detector, the console in
## a real browser (make browser), every framework adapter's module (make
## adapters), the mutation runner's own tests (make mutation-runner) and
## the mutation table (make mutation), kernel tests against each mutant
## included. The PostgreSQL tests skip unless BK_PG_DSN names a server.
##
## Durations, wall time of `bash .ci/run` on a clean clone (make
## test-timed), 2026-12-02, on 2 cores with nothing else running, the
## module cache warm and the build cache warm from earlier runs of most
## of the same code (the last changes touched the stores, the kernel and
## what imports them):
##   vet              42 s
##   race            282 s
##   browser          29 s
##   adapters         86 s
##   mutation-runner   3 s
##   mutation         90 s for the 140 switches (179 test binary runs,
##                   every one narrowed to noticed.txt; adversary 4 s)
##   test            532 s in all
## With the build cache cold for nearly every package (the run before,
## after renames across the tree) and the CPU shared with other work, the
## same run took 916 s (vet 129, race 453, adapters 149): most of race is
## building and linking the race-instrumented test binaries.
##   mutation-full   every switch's packages in full: about 50 s for
##                   three switches (make mutation-full ONLY=...); the
##                   whole table takes several times that, so CI runs the
##                   narrowed one
## make test-timed prints each target's wall time (CI's log shows them).
TEST_TARGETS = vet race browser adapters mutation-runner mutation
test: $(TEST_TARGETS)

## test-timed: make test, one target after another, each one's wall time
## printed after it (.ci/run runs this, so that CI's log shows them).
test-timed:
	@set -e; all=$$(date +%s); for t in $(TEST_TARGETS); do \
		s=$$(date +%s); $(MAKE) --no-print-directory $$t; \
		echo "make $$t: $$(( $$(date +%s) - s )) s"; \
	done; echo "make test: $$(( $$(date +%s) - all )) s"

## test-pg: `make test` against a throwaway PostgreSQL server that
## .ci/with-postgres starts (and stops) for the run, as CI does.
test-pg:
	.ci/with-postgres $(MAKE) test

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "not gofmt-formatted (run gofmt -w):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags bkmutate ./...

race:
	$(GO) test -race -count=1 ./...

## browser: the approvals console (bk serve) driven in headless Chromium,
## over a store examples/support_desk filled (inspect/console/browsertest,
## a module of its own so that the kernel's does not require chromedp). It
## skips without a browser, but fails under CI=true; screenshots go to
## $$BK_SCREENSHOTS (default: the test's temporary directory, named in the
## log).
browser:
	cd inspect/console/browsertest && $(GO) vet ./... && $(GO) test -count=1 -v ./...

## adapters: the tests of every framework adapter, each its own module
## under adapters/ (the conformance suite, toolgate/adaptertest, included),
## its example among them (./example, whose test runs the example's run
## and checks what it prints; main only calls run, so the example is not
## also built and run with go run).
adapters:
	set -e; for d in adapters/*/; do (cd $$d && $(GO) vet ./... && $(GO) test -race -count=1 ./...); done

## mutation-fast: for every check of the kernel a planner can reach,
## adversarial_bk against the kernel built without it (bkmutate); fails if
## some such check is noticed by no attack or some attack does not win
## against the kernel missing its target; and the runner's own tests. A
## quick check on its own: make test runs make mutation-runner instead,
## since make mutation plays the same attacks (with more seeds) and judges
## them the same way.
mutation-fast:
	$(GO) test -tags bkmutate -count=1 ./bench/mutation

## mutation-runner: the tests of the mutation runner (bench/mutation)
## without TestEveryCheckIsCaught, the attacks make mutation plays too.
mutation-runner:
	$(GO) test -tags bkmutate -count=1 -skip '^TestEveryCheckIsCaught$$' ./bench/mutation

## mutation: the mutation table (docs/benchmark.md): per check, the
## attacks that noticed it missing and the tests that failed. Each
## switch's tests are narrowed (-test.run) to those that noticed it in the
## last full run, as bench/mutation/noticed.txt records; a switch that
## file is stale for (a new switch, a guarding package added, a test
## renamed or gone, or its tests all passing) runs its guarding packages in
## full, and the run says the file is stale. A switch counts as noticed
## only by a test that fails in this run.
mutation:
	$(GO) run -tags bkmutate ./bench/mutation

## mutation-full: the mutation table with every guarding package's tests
## run in full against every switch; it rewrites
## bench/mutation/noticed.txt (commit it). ONLY=a,b runs those switches
## and updates their lines.
mutation-full:
	$(GO) run -tags bkmutate ./bench/mutation -full $(if $(ONLY),-only $(ONLY))

## bench: the performance benchmarks, with allocations; ten samples each,
## for benchstat (it gives no confidence interval under six).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 10 ./...

## bench-pg: the episode benchmarks of every store, PostgreSQL on a
## throwaway server that syncs to disk like a production one.
bench-pg:
	BK_PG_OPTS= .ci/with-postgres $(GO) test -run '^$$' -bench 'Episode' -benchmem -count 10 ./kernel

example:
	$(GO) run ./examples/multi_episode

## fuzz: each fuzz target for FUZZTIME (default 2m), one after another.
FUZZTIME ?= 2m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPayload$$' -fuzztime $(FUZZTIME) ./kernel
	$(GO) test -run '^$$' -fuzz '^FuzzOps$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./kernel
	$(GO) test -run '^$$' -fuzz '^FuzzRules$$' -fuzztime $(FUZZTIME) ./sim
	$(GO) test -run '^$$' -fuzz '^FuzzExtract$$' -fuzztime $(FUZZTIME) ./internal/advisor
	$(GO) test -run '^$$' -fuzz '^FuzzRecordRoundTrip$$' -fuzztime $(FUZZTIME) ./store/sqlitestore
