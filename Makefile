GO ?= go

.PHONY: test test-pg vet race bench bench-pg example fuzz

## test: vet, then every test under the race detector. The PostgreSQL tests
## skip unless BK_PG_DSN names a server.
test: vet race

## test-pg: what CI runs — `make test` against a throwaway PostgreSQL server
## that .ci/with-postgres starts (and stops) for the run.
test-pg:
	.ci/with-postgres $(MAKE) test

vet:
	$(GO) vet ./...

race:
	$(GO) test -race -count=1 ./...

## bench: the performance benchmarks, with allocations.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./...

## bench-pg: the episode benchmarks of every store, PostgreSQL on a
## throwaway server that syncs to disk like a production one.
bench-pg:
	BK_PG_OPTS= .ci/with-postgres $(GO) test -run '^$$' -bench 'Episode' -benchmem -count 5 ./store/...

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
