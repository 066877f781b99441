GO ?= go

.PHONY: test test-pg vet race browser adapters mutation-fast mutation bench bench-pg example fuzz

## test: what CI runs (inside .ci/with-postgres) — gofmt and vet (the default build and
## the bkmutate build), every test under the race detector, the console in
## a real browser (make browser), every framework adapter's module (make
## adapters), and the mutation
## test (under a minute on two cores, so CI runs all of it, kernel tests
## against each mutant included). The PostgreSQL tests skip unless BK_PG_DSN
## names a server.
test: vet race browser adapters mutation-fast mutation

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
## and its example with go run (./example, whose own test checks what it
## prints).
adapters:
	set -e; for d in adapters/*/; do (cd $$d && $(GO) vet ./... && $(GO) test -race -count=1 ./... && $(GO) run ./example >/dev/null); done

## mutation-fast: for every check of the kernel a planner can reach,
## adversarial_bk against the kernel built without it (bkmutate); fails if
## some such check is noticed by no attack or some attack does not win
## against the kernel missing its target. A few seconds, for a quick check;
## `make mutation` also runs the guarding packages' tests against every
## switch of every package.
mutation-fast:
	$(GO) test -tags bkmutate -count=1 ./bench/mutation

## mutation: the full mutation table (docs/benchmark.md): per check, the
## attacks that noticed it missing and the tests that failed.
mutation:
	$(GO) run -tags bkmutate ./bench/mutation

## bench: the performance benchmarks, with allocations; ten samples each,
## for benchstat (it gives no confidence interval under six).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 10 ./...

## bench-pg: the episode benchmarks of every store, PostgreSQL on a
## throwaway server that syncs to disk like a production one.
bench-pg:
	BK_PG_OPTS= .ci/with-postgres $(GO) test -run '^$$' -bench 'Episode' -benchmem -count 10 ./store/...

example:
	$(GO) run ./examples/multi_episode

## fuzz: each fuzz target for FUZZTIME (default 2m), one after another.
FUZZTIME ?= 2m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPayload$$' -fuzztime $(FUZZTIME) ./kernel
	$(GO) test -run '^$$' -fuzz '^FuzzOps$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./kernel
	$(GO) test -run '^$$' -fuzz '^FuzzRules$$' -fuzztime $(FUZZTIME) ./sim
	$(GO) test -run '^$$' -fuzz '^FuzzExtract$$' -fuzztime $(FUZZTIME) ./worker/llm
	$(GO) test -run '^$$' -fuzz '^FuzzRecordRoundTrip$$' -fuzztime $(FUZZTIME) ./store/sqlitestore
