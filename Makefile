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
