package accuracy

import (
	"errors"
	"fmt"
	"io"

	"github.com/infscale/infscale/internal/boundedfile"
)

// Prediction is one peer simulator's prediction of one stage's metric (a
// row of the public sim-to-real set's peers-trainval.csv).
type Prediction struct {
	Key       Key
	Metric    Metric
	Simulator string
	// PredictedMS is the simulator's value, ActualMS the measurement it
	// was compared with, in milliseconds.
	PredictedMS, ActualMS float64
}

// ReadPeers reads a peers CSV: columns experiment, stage_index,
// metric_name, simulator, predicted_ms (actual_ms optional). Rows of
// metrics accuracy does not compare are skipped. Errors name
// file:line:column and the column; a simulator's prediction of one
// metric and stage given on two rows is an error too.
func ReadPeers(name string) ([]Prediction, error) {
	return readFile(name, ParsePeers)
}

// ParsePeers is ReadPeers on an open reader; name is used in errors.
func ParsePeers(name string, rd io.Reader) ([]Prediction, error) {
	t, err := openTable(name, rd, "experiment", "stage_index", "metric_name", "simulator", "predicted_ms")
	if err != nil {
		return nil, err
	}
	type peerKey struct {
		Key
		m   Metric
		sim string
	}
	seen := map[peerKey]int{} // the line of each prediction
	known := map[Metric]bool{}
	for _, m := range Metrics {
		known[m] = true
	}
	out, err := rows(t, func() (Prediction, bool, error) {
		m := Metric(t.str("metric_name"))
		if !known[m] {
			return Prediction{}, false, nil
		}
		st, err := t.count("stage_index", -1, 1<<20)
		if err == nil && t.str("stage_index") == "" {
			err = t.errorf("stage_index", "empty")
		}
		p, ok, err2 := t.num("predicted_ms")
		if err2 == nil && (!ok || !(p >= 0 && p <= maxMeasuredMs)) {
			// 1e300 printed a MAPE of 300 digits through the table.
			err2 = t.errorf("predicted_ms", "%q: want milliseconds from 0 to 1e10 (1e7 s, the longest stage)", t.str("predicted_ms"))
		}
		a, _, err3 := t.num("actual_ms")
		sim := t.str("simulator")
		var err4 error
		if sim == "" {
			err4 = t.errorf("simulator", "empty")
		}
		if e := errors.Join(err, err2, err3, err4); e != nil {
			return Prediction{}, false, e
		}
		k := peerKey{Key{t.str("experiment"), st}, m, sim}
		if l, ok := seen[k]; ok {
			return Prediction{}, false, fmt.Errorf("%s:%d: simulator %s's %s of experiment %q stage %d repeats line %d: one prediction per simulator, metric and stage; remove one", name, t.line(), sim, m, k.Experiment, st, l)
		}
		seen[k] = t.line()
		return Prediction{Key: Key{t.str("experiment"), st}, Metric: m, Simulator: sim, PredictedMS: p, ActualMS: a}, true, nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no predictions of %v", name, Metrics)
	}
	return out, nil
}

// MaxTableBytes bounds a ground-truth or peers CSV (the shared set's
// are under 200 kB).
const MaxTableBytes = 64 << 20

// readFile opens name (a regular file of at most MaxTableBytes: a FIFO
// would block, /dev/zero exhaust memory) and parses it with parse, which
// names name in its errors.
func readFile[T any](name string, parse func(string, io.Reader) (T, error)) (T, error) {
	f, err := boundedfile.Open(name, MaxTableBytes, "a CSV table", "want a CSV file")
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return parse(name, f)
}
