package main

import (
	"context"
	"fmt"
	"os"
)

// The first six episodes of the default run: the stale readings of
// episodes 0 and 3 teach the learner block_stale_actions before episode 4.
func Example_sixEpisodes() {
	if err := run(context.Background(), []string{"--episodes", "6"}, os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// Multi-episode demo: 6 episodes, seed 7, store memory
	// Ep 0  | temp= 87.0 stale=True  conf=0.85 conflict=False | belief=N pred=-    | NO_ACTION | constraints=[]
	// Ep 1  | temp= 91.0 stale=False conf=0.59 conflict=True  | belief=N pred=-    | NO_ACTION | constraints=[]
	// Ep 2  | temp=108.0 stale=False conf=0.51 conflict=False | belief=Y pred=+1.0 | ALERT     | constraints=[]
	// Ep 3  | temp= 86.0 stale=True  conf=0.98 conflict=False | belief=N pred=-    | NO_ACTION | constraints=[]
	//   >> LEARNED: [block_stale_actions] (before episode 4; STALE_EVIDENCE x2)
	// Ep 4  | temp= 99.0 stale=False conf=0.41 conflict=False | belief=N pred=-    | NO_ACTION | constraints=[block_stale_actions]
	// Ep 5  | temp= 81.0 stale=False conf=0.73 conflict=False | belief=Y pred=-0.5 | REVIEW    | constraints=[block_stale_actions] reason=NEGATIVE_PREDICTION
	// Summary: 6 episodes | ALERT=1 REVIEW=1 NO_ACTION=4
	// Constraints learned: 1 [block_stale_actions]
	// Codes seen: LOW_CONFIDENCE=1 NEGATIVE_PREDICTION=1 PREDICTION_MISSING_BELIEF=4 STALE_EVIDENCE=2 UNRESOLVED_CONFLICT=1
}
