package config

import (
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/infscale/infscale/pkg/recommend"
)

// TestQuantityMarshalRoundTrip: a target printed and read back is the same
// target of its signal: kv 80% is 0.8 both ways (printed as 80 it read
// back as 80, a kv target above 1), cpu 80% is 80, ttft 500ms is 0.5 s.
func TestQuantityMarshalRoundTrip(t *testing.T) {
	for _, c := range []struct {
		in   string
		sig  recommend.Signal
		want float64
	}{
		{"80%", recommend.SignalKV, 0.8},
		{"12.5%", recommend.SignalDemand, 0.125},
		{"80%", recommend.SignalCPU, 80},
		{"500ms", recommend.SignalTTFT, 0.5},
		{"24", recommend.SignalQueue, 24},
	} {
		q, err := ParseQuantity(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		b, err := yaml.Marshal(struct{ T Quantity }{q})
		if err != nil {
			t.Fatalf("%s: marshal: %v", c.in, err)
		}
		var back struct{ T Quantity }
		if err := yaml.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %q read back: %v", c.in, b, err)
		}
		if got, err := back.T.For(c.sig); err != nil || got != c.want {
			t.Errorf("%s (%s) printed %q, read back as %v (%v), want %v", c.in, c.sig, b, got, err, c.want)
		}
	}
}
