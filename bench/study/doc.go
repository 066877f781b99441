// Package study is the paper's Stripe refund benchmark (sections 9–10): the
// tasks, the agents, the measured metrics and the tables.
//
// [Run] plays every (task, seed, agent) episode of a [Config]: the payment
// tool's faults for each (task, seed) come from package perturb, bit for bit
// as in the reference implementation; each [Agent] plays the episode and
// returns an [Outcome] whose [Metrics] are measured from what the agent
// recorded, never assigned. Run writes one [Result] per episode as a JSON
// line and returns a [Summary] that prints the paper's Table 3 and Table 4
// ([Summary.WriteTables]) and a markdown report ([Summary.WriteReport]).
//
// Tasks are JSON files ([Task], [LoadTasks]); the paper's six are built in
// ([BuiltinTasks]). The agents are registered by name ([AgentNames]):
// string_glue and json_glue are the ungoverned baselines ([GlueOutput]); bk
// runs on the kernel ([KernelOutput]) and asks a decider whether to propose
// its belief and plan — always yes for bk, a language model for llm_bk.
//
// # Metrics
//
// Task success, unsafe action and unsupported belief follow REPRODUCTION.md
// §4. Traceability is the share of an episode's decisions whose chain
// decision → plan/belief → evidence artifact → percept can be rebuilt by
// following the ids the kernel recorded; failure transparency is 1 when an
// agent acted correctly or did not act and recorded a machine-readable
// reason code. The glue agents record no ids and no codes.
//
// # Concurrency
//
// Run may be called concurrently; with [Config.Parallel] above 1 it plays
// episodes on several goroutines and still writes them in order. Agents are
// safe for concurrent use. A [Summary] is not safe for concurrent use.
package study
