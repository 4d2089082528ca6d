package promql

import "testing"

// TestOwnSeries: a target name with a quote and a backslash is one label
// value, escaped once.
func TestOwnSeries(t *testing.T) {
	if got, want := OwnSeries("infscale_desired_replicas", "chat"), `max(infscale_desired_replicas{target="chat"})`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := OwnSeries("infscale_recommended_replicas", `a"b\c`), `max(infscale_recommended_replicas{target="a\"b\\c"})`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := Validate(OwnSeries("infscale_desired_replicas", `a"b\c`)); err != nil {
		t.Errorf("does not parse back: %v", err)
	}
}
