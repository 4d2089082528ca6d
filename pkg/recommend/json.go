package recommend

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// jsonNum writes x, or null when it is NaN or ±Inf (JSON has no NaN).
func jsonNum(b []byte, x float64) []byte {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, x, 'g', -1, 64)
}

// MarshalJSON writes the raw result with unknown numbers as null:
// {"signal":"queue","value":12,"target":4,"ratio":3,"replicas":3,"desired":3,"valid":true}.
// An invalid (unknown) metric recommends nothing, so its replicas and
// desired are null too, not the current count the Go value carries.
func (r Raw) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 128)
	b = append(b, `{"signal":`...)
	b = strconv.AppendQuote(b, r.Signal.String())
	b = append(b, `,"value":`...)
	b = jsonNum(b, r.Value)
	b = append(b, `,"target":`...)
	b = jsonNum(b, r.Target)
	b = append(b, `,"ratio":`...)
	b = jsonNum(b, r.Ratio)
	count := func(b []byte, n int) []byte {
		if !r.Valid {
			return append(b, "null"...)
		}
		return strconv.AppendInt(b, int64(n), 10)
	}
	b = append(b, `,"replicas":`...)
	b = count(b, r.Replicas)
	b = append(b, `,"desired":`...)
	b = count(b, r.Desired)
	b = append(b, `,"valid":`...)
	b = strconv.AppendBool(b, r.Valid)
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes (null as NaN; null replicas
// and desired as 0).
func (r *Raw) UnmarshalJSON(b []byte) error {
	var v struct {
		Signal            Signal
		Value, Target     *float64
		Ratio             *float64
		Replicas, Desired int
		Valid             bool
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	f := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*r = Raw{Signal: v.Signal, Value: f(v.Value), Target: f(v.Target), Ratio: f(v.Ratio), Replicas: v.Replicas, Desired: v.Desired, Valid: v.Valid}
	return nil
}

// MarshalJSON writes the results as an object keyed by signal name, in
// policy order: {"queue":{...},"kv":{...}}.
func (rs RawResults) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, r.Signal.String())
		b = append(b, ':')
		rb, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, rb...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads the object MarshalJSON writes (order by signal).
func (rs *RawResults) UnmarshalJSON(b []byte) error {
	var m map[string]Raw
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	out := make(RawResults, 0, len(m))
	for _, s := range Signals() {
		if r, ok := m[s.String()]; ok {
			out = append(out, r)
			delete(m, s.String())
		}
	}
	for k := range m {
		return fmt.Errorf("raw: unknown signal %q", k)
	}
	*rs = out
	return nil
}
