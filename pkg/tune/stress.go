package tune

import (
	"fmt"
	"math"
)

// Stress is one stressed copy of the history (the screening sample and
// the held-out part).
type Stress struct {
	// Name labels the column ("x1.5", "bursts x2").
	Name string `json:"name"`
	// Rate compresses time (trace.RateScale); 1 leaves it.
	Rate float64 `json:"rate"`
	// Bursts amplifies bursts (trace.AmplifyBursts, 60 s windows); <= 1
	// leaves them.
	Bursts float64 `json:"bursts"`
	// Gaps stretches every silent gap (no arrival for at least two
	// decision periods) Gaps times as long (StretchGaps); <= 1 leaves
	// them. A copy with no such gap is the history itself.
	Gaps float64 `json:"gaps,omitempty"`
}

// StressError is a stressed copy too compressed to replay: the held-out
// part (Span seconds) at Stress.Rate times its rate spans less than one
// decision Period (seconds).
type StressError struct {
	Stress       Stress
	Span, Period float64
}

func (e *StressError) Error() string {
	most := math.Floor(100*e.Span/e.Period) / 100 // the largest rate whose copy spans a period
	head := fmt.Sprintf("%s: the held-out part (%gs) at %g times its rate spans less than one period (%gs)", e.Stress.Name, e.Span, e.Stress.Rate, e.Period)
	if most <= 1 {
		return head + ": no rate copy fits (its rate must be more than 1); give --stress without rate: copies (e.g. bursts:2,gaps:2, or none), or a longer trace"
	}
	return fmt.Sprintf("%s: at most %g times; give --stress with rate: copies of at most that (or none), or a longer trace (--window) or held-out part (--holdout)", head, most)
}

// DefaultStress is the history at 1.5x and 2x its rate, with its bursts
// doubled, and with its silent gaps twice as long.
var DefaultStress = []Stress{{Name: "x1.5", Rate: 1.5}, {Name: "x2", Rate: 2}, {Name: "bursts x2", Rate: 1, Bursts: 2}, {Name: "gaps x2", Rate: 1, Gaps: 2}}
