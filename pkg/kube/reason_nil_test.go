package kube

import "testing"

// TestReasonOfNilDoesNotPanic: Reason(nil) answered "unavailable" until the
// throttled-read check called err.Error() on it, a nil dereference in a
// caller that counts before checking.
func TestReasonOfNilDoesNotPanic(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Reason(nil) panicked: %v", r)
		}
	}()
	if got := Reason(nil); got != "unavailable" {
		t.Errorf("Reason(nil) = %q, want unavailable (as before)", got)
	}
}
