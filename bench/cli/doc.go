// Package cli is the benchmark's command line: [Run] parses the flags of
// `go run ./bench`, runs the study (package study) and prints Table 3,
// Table 4 and the run's wall time.
//
// Flags, with their defaults:
//
//	--seeds 50                 seeds per task
//	--tasks all                comma-separated task ids
//	--task-dir DIR             load the task JSON files from DIR instead of the built-in ones
//	--agents string_glue,json_glue,bk (plus llm_bk when an LLM endpoint is configured)
//	--out results.jsonl        one JSON line per episode ("" writes none)
//	--report FILE              a markdown report with both tables and representative traces
//	--stale 0.10 --conflict 0.10 --low-confidence 0.10 --tool-drop 0.05
//	--store memory|sqlite      --db FILE (sqlite: every episode goes into that one store)
//	--parallel 1               episodes in flight
//	--llm-url, --llm-model, --llm-api-key (env BK_LLM_URL, BK_LLM_MODEL, BK_LLM_API_KEY)
//	--reasoning-effort, --llm-concurrency 4
//	--cpuprofile FILE, --memprofile FILE
//
// # Concurrency
//
// Run may be called concurrently with different arguments and writers; it
// shares nothing between calls.
package cli
