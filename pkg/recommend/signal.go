package recommend

import (
	"fmt"
	"strings"
	"time"
)

// signalKind is how a signal's target is read (raw.go's arithmetic).
type signalKind int

const (
	// additive: a request count summed over replicas; AverageValue
	// arithmetic ceil(total/target); a demand the lookahead can project.
	additive signalKind = iota + 1
	// utilization: a per-replica mean (ratio = mean/target, replicas =
	// ceil(ratio × reporting)); needs a running pod, so not from zero.
	utilization
	// latency: a quantile in seconds compared with its target.
	latency
	// capacity: work arriving per second against one replica's capacity,
	// the target a utilisation (demand.go).
	capacity
)

// signalInfo is one row of the signal table: everything a front end or a
// rule needs to know about a signal.
type signalInfo struct {
	name string     // flag, config and JSON name (lower case)
	unit string     // how the target is expressed, for messages
	kind signalKind // arithmetic
	// maxTarget bounds the target from above (0: no bound), e.g. kv's 1.
	maxTarget float64
	// example is a target to show in messages; examplePercent the same
	// written as a percentage, for a fraction (maxTarget 1).
	example, examplePercent string
}

// MaxLatencyTarget bounds a latency target (ttft, queuewait) and the
// TTFT SLOs the commands derive one from: a week. No server's TTFT
// histogram has a bucket near it (vLLM's last finite one is 2560 s), so a
// quantile never reaches such a target and the signal never scales up: a
// target of 100000h is a slip (a unit, a digit), not a setting.
const MaxLatencyTarget = 7 * 24 * time.Hour

// maxLatencyTarget is MaxLatencyTarget in seconds, the targets' unit.
const maxLatencyTarget = float64(MaxLatencyTarget / time.Second)

// signalTable is the one vocabulary of signals, indexed by Signal. A new
// signal is a constant in types.go, a row here and (when it needs one)
// its case in raw.go; every front end reads names, units and rules here.
var signalTable = [...]signalInfo{
	SignalQueue:     {name: "queue", unit: "requests per replica", kind: additive, example: "24"},
	SignalWaiting:   {name: "waiting", unit: "requests per replica", kind: additive, example: "2"},
	SignalRunning:   {name: "running", unit: "requests per replica", kind: additive, example: "32"},
	SignalKV:        {name: "kv", unit: "fraction of the KV cache", kind: utilization, maxTarget: 1, example: "0.75", examplePercent: "75%"},
	SignalCPU:       {name: "cpu", unit: "percent of the CPU request", kind: utilization, example: "60"},
	SignalTTFT:      {name: "ttft", unit: "seconds", kind: latency, maxTarget: maxLatencyTarget, example: "2s"},
	SignalQueueWait: {name: "queuewait", unit: "seconds", kind: latency, maxTarget: maxLatencyTarget, example: "0.5s"},
	SignalDemand:    {name: "demand", unit: "utilisation of one replica's capacity", kind: capacity, maxTarget: 1, example: "0.8", examplePercent: "80%"},
}

func (s Signal) known() bool { return s > 0 && int(s) < len(signalTable) }

func (s Signal) info() signalInfo {
	if s.known() {
		return signalTable[s]
	}
	return signalInfo{}
}

// Signals returns every signal in table order (queue, waiting, running,
// kv, cpu, ttft, queuewait, demand).
func Signals() []Signal {
	out := make([]Signal, 0, len(signalTable)-1)
	for s := Signal(1); s.known(); s++ {
		out = append(out, s)
	}
	return out
}

// SignalNames is the allowed signal names, comma-separated, for help and
// error texts: "queue, waiting, running, kv, cpu, ttft, queuewait, demand".
func SignalNames() string {
	names := make([]string, 0, len(signalTable)-1)
	for _, s := range Signals() {
		names = append(names, s.String())
	}
	return strings.Join(names, ", ")
}

// String is the signal's name as used in flags and config: queue, waiting,
// running, kv, cpu, ttft, queuewait, demand.
func (s Signal) String() string {
	if s.known() {
		return signalTable[s].name
	}
	return fmt.Sprintf("Signal(%d)", int(s))
}

// ParseSignal maps a name (queue, waiting, running, kv, cpu, ttft,
// queuewait, demand; exactly,
// in lower case, as every front end writes them) to its Signal; the error
// lists the allowed names.
func ParseSignal(name string) (Signal, error) {
	for _, s := range Signals() {
		if name == signalTable[s].name {
			return s, nil
		}
	}
	for _, s := range Signals() {
		if strings.EqualFold(name, signalTable[s].name) {
			return 0, fmt.Errorf("unknown signal %q: signal names are lower case (%s)", name, s)
		}
	}
	return 0, fmt.Errorf("unknown signal %q (allowed: %s)", name, SignalNames())
}

// MarshalText writes the signal's name.
func (s Signal) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a signal name (ParseSignal).
func (s *Signal) UnmarshalText(b []byte) error {
	v, err := ParseSignal(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Additive reports whether the signal is a request count summed over
// replicas (queue, waiting, running): AverageValue arithmetic
// ceil(total/target), and a demand lookahead can project.
func (s Signal) Additive() bool { return s.info().kind == additive }

// Utilization reports whether the signal is a per-replica utilisation (kv,
// cpu): ratio = mean/target, replicas = ceil(ratio × reporting). Such a
// signal needs a running pod, so it cannot scale from zero.
func (s Signal) Utilization() bool { return s.info().kind == utilization }

// Seconds reports whether the signal's target is a time in seconds (ttft),
// which front ends may also accept as a duration such as 2s.
func (s Signal) Seconds() bool { return s.info().unit == "seconds" }

// Unit is how the signal's target is expressed, for messages.
func (s Signal) Unit() string { return s.info().unit }

// TargetValue is a target written as v (quantity.ParseTarget: duration
// when it carried a time unit, percent when it ended in %) in the
// signal's base unit: a percentage is a fraction for kv and demand (80% =
// 0.8) and percent for cpu (80% = 80); a duration is seconds. The one rule
// behind the config's target: key, decide's --target and the replay's
// policy strings. Errors: a duration for a signal not in seconds, a
// percentage for one that is not a fraction or a percent.
func (s Signal) TargetValue(v float64, duration, percent bool) (float64, error) {
	switch {
	case duration && !s.Seconds():
		return 0, fmt.Errorf("%s target is a number (%s), not a duration", s, s.Unit())
	case percent && (s == SignalKV || s == SignalDemand):
		return v / 100, nil
	case percent && s != SignalCPU:
		return 0, fmt.Errorf("%s target is a number (%s), not a percentage", s, s.Unit())
	}
	return v, nil
}
