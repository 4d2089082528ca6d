package trace

import (
	"bytes"
	"encoding/json"
	"math"
)

// mooncakeRow is one line of a Mooncake trace (kvcache-ai/Mooncake,
// FAST 2025): {"timestamp": ms since start, "input_length": tokens,
// "output_length": tokens, "hash_ids": [...]} (hash_ids, the 512-token
// prefix blocks, are ignored).
type mooncakeRow struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int64   `json:"input_length"`
	OutputLength *int64   `json:"output_length"`
}

type mooncakeReader struct {
	*lines
	order
}

// OpenMooncake starts a pass over a Mooncake JSON-lines trace.
func OpenMooncake(name string) (Reader, error) {
	l, err := openLines(name)
	if err != nil {
		return nil, err
	}
	return &mooncakeReader{lines: l}, nil
}

func (r *mooncakeReader) Next() (Request, error) {
	b, err := r.nextNonBlank()
	if err != nil {
		return Request{}, err
	}
	const want = `want a JSON object {"timestamp": ms, "input_length": n, "output_length": n}`
	var row mooncakeRow
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return Request{}, r.errorf("%s, found %s", want, clip(string(b)))
	}
	if err := json.Unmarshal(b, &row); err != nil {
		return Request{}, r.errorf("%s: %v", want, err)
	}
	switch {
	case row.Timestamp == nil:
		return Request{}, r.errorf("no \"timestamp\": %s", want)
	case *row.Timestamp < 0 || math.IsInf(*row.Timestamp, 0):
		return Request{}, r.errorf("timestamp: want milliseconds >= 0")
	case row.InputLength == nil:
		return Request{}, r.errorf("no \"input_length\": %s", want)
	case *row.InputLength < 1 || *row.InputLength > math.MaxInt32:
		return Request{}, r.errorf("input_length: want an integer >= 1")
	case row.OutputLength == nil:
		return Request{}, r.errorf("no \"output_length\": %s", want)
	case *row.OutputLength < 0 || *row.OutputLength > math.MaxInt32:
		return Request{}, r.errorf("output_length: want an integer >= 0")
	}
	t := *row.Timestamp / 1000
	if msg := r.check(t); msg != "" {
		return Request{}, r.errorf("%s", msg)
	}
	return request(t, int32(*row.InputLength), int32(*row.OutputLength)), nil
}
