package recommend

import (
	"fmt"
	"strings"
)

var signalNames = [...]string{SignalQueue: "queue", SignalWaiting: "waiting", SignalRunning: "running", SignalKV: "kv", SignalCPU: "cpu", SignalTTFT: "ttft", SignalQueueWait: "queuewait", SignalDemand: "demand"}

// String is the signal's name as used in flags and config: queue, waiting,
// running, kv, cpu, ttft, queuewait, demand.
func (s Signal) String() string {
	if s >= SignalQueue && s <= SignalDemand {
		return signalNames[s]
	}
	return fmt.Sprintf("Signal(%d)", int(s))
}

// ParseSignal maps a name (queue, waiting, running, kv, cpu, ttft,
// queuewait, demand; case
// insensitive) to its Signal; the error lists the allowed names.
func ParseSignal(name string) (Signal, error) {
	for s := SignalQueue; s <= SignalDemand; s++ {
		if strings.EqualFold(name, signalNames[s]) {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown metric %q (allowed: %s)", name, strings.Join(signalNames[1:], ", "))
}

// MarshalText writes the signal's name.
func (s Signal) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a signal name.
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
func (s Signal) Additive() bool { return s == SignalQueue || s == SignalWaiting || s == SignalRunning }

// Utilization reports whether the signal is a per-replica utilisation (kv,
// cpu): ratio = mean/target, replicas = ceil(ratio × reporting). Such a
// signal needs a running pod, so it cannot scale from zero.
func (s Signal) Utilization() bool { return s == SignalKV || s == SignalCPU }

// Unit is how the signal's target is expressed, for messages.
func (s Signal) Unit() string {
	switch {
	case s.Additive():
		return "requests per replica"
	case s == SignalKV:
		return "fraction of the KV cache"
	case s == SignalCPU:
		return "percent of the CPU request"
	case s == SignalTTFT || s == SignalQueueWait:
		return "seconds"
	case s == SignalDemand:
		return "utilisation fraction of one replica's capacity"
	}
	return ""
}
