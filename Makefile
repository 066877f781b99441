GO ?= go

.PHONY: test vet race bench example fuzz

## test: what CI runs — vet, then every test under the race detector.
test: vet race

vet:
	$(GO) vet ./...

race:
	$(GO) test -race -count=1 ./...

## bench: the performance benchmarks, with allocations.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./...

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
