package orchestrator

// Names the package's external tests use, kept unexported in the package.
const (
	DefaultMaxRounds = defaultMaxRounds
	Writer           = writer
)

// Order returns the ids of the registered workers in execution order.
func (o *Orchestrator) Order() []string { return o.ids() }

// WorkerID, Round and Attempt read the step's position.
func (s *StepContext) WorkerID() string { return s.workerID }
func (s *StepContext) Round() int       { return s.round }
func (s *StepContext) Attempt() int     { return s.attempt }

// Check checks f against the contract.
func (c FindingContract) Check(f Finding, resolve func(id string) bool) error {
	if r := c.check(f, resolve); r != nil {
		return r
	}
	return nil
}

// Progressed is the runtime's test of a round's progress.
var Progressed = progressed
