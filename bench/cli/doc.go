// Package cli is the benchmark's command line: [Run] parses the flags of
// `go run ./bench`, runs the study (package study) and prints Table 3,
// Table 4, what their figures mean, why llm_bk did not run (when it did
// not), the files written, and the run's wall and CPU time.
//
// Flags, with their defaults:
//
//	--seeds 50                 seeds per task
//	--seed 0                   first seed: seeds S … S+N-1 (as --seed in the examples: the seed observations are drawn from)
//	--tasks all                comma-separated task ids
//	--task-dir DIR             load the task JSON files from DIR instead of the built-in ones
//	--agents string_glue,json_glue,bk (plus llm_bk when an LLM endpoint is configured)
//	--out results.jsonl        one JSON line per episode ("" writes none)
//	--report FILE              a markdown report with both tables and representative traces
//	--stale 0.10 --conflict 0.10 --low-confidence 0.10 --tool-drop 0.05
//	--store memory|sqlite|postgres  memory: a fresh kernel per episode; sqlite, postgres: one store for the run
//	--db FILE                  the SQLite file (implies --store sqlite), as in the examples
//	--dsn DSN                  the PostgreSQL database (with --store postgres), as in the examples; never printed
//	--parallel 1               episodes in flight
//	--llm-url, --llm-model, --llm-api-key (env BK_LLM_URL, BK_LLM_MODEL, BK_LLM_API_KEY)
//	--reasoning-effort, --llm-concurrency 4
//	--cpuprofile FILE, --memprofile FILE
//	--scoring ground_truth     or paper: faults read from the charge the agent held, as the paper scored
//	--steps                    number the report's trace lines t0, t1, … as the paper does
//
// -h prints the flags to stdout ([Run] returns flag.ErrHelp). Bad flags
// (usage on stderr, errors wrapping [ErrUsage]), a bad configuration, an
// output path whose directory does not exist, and an LLM endpoint that
// does not answer (study.CheckEndpoint, when llm_bk is to run) are refused
// before any file is created. A --db file is checked whole before the run
// writes into it. A run in which every llm_bk episode ended in LLM_ERROR
// fails too (wrapping study.ErrEndpoint), and writes nothing; when some
// did, the output says how many. Output files are written
// beside their final names and renamed into place when the run succeeds,
// so a failed run leaves earlier files as they were. An error about the
// database names its file.
//
// # Concurrency
//
// Run may be called concurrently with different arguments and writers; it
// shares nothing between calls.
package cli
