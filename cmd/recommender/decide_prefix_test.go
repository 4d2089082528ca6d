package main

import (
	"strings"
	"testing"
)

// decide's --prefix-cache-hit lowers the demand's prefill: 8 req/s of
// 100-token prompts with 75% of the tokens in the prefix cache prefill 25
// tokens a request (the step says so), so the work is below that of the
// same arrivals with every token prefilled; the decode part is the same,
// so the saving is the prefill of the 75 cached tokens, three quarters of
// the saving with every token cached. A fraction outside 0..1 is refused
// naming the flag.
func TestDecidePrefixCacheHit(t *testing.T) {
	args := []string{"--current", "2", "--metric", "demand", "--target", "0.5", "--arrival-rate", "8", "--mean-prompt", "100", "--mean-output", "50"}
	plain := decideOK(t, args...)
	hit := decideOK(t, append(args, "--prefix-cache-hit", "75%")...)
	var text string
	for _, s := range hit.Steps {
		text += s.Text + "\n"
	}
	if !strings.Contains(text, "prefix cache hit 0.75: 25 prefilled") {
		t.Errorf("steps do not show the hit fraction:\n%s", text)
	}
	p, h := plain.Raw["demand"].Value, hit.Raw["demand"].Value
	if p == nil || h == nil || !(*h < *p) {
		t.Fatalf("demand work %v with hits, %v without: want lower with hits", h, p)
	}
	// Every token cached saves the whole prefill, 800 tokens/s: 75% of the
	// tokens saves 600, three quarters of it, whatever the replica's rate.
	all := decideOK(t, append(args, "--prefix-cache-hit", "1")...).Raw["demand"].Value
	if all == nil {
		t.Fatal("no demand work with every token cached")
	}
	if got := (*p - *h) / (*p - *all); got < 0.75-1e-9 || got > 0.75+1e-9 {
		t.Errorf("saving at 75%% over saving at 100%% = %v, want 0.75", got)
	}
	code, _, errs := runDecide(t, append(args, "--prefix-cache-hit", "1.5")...)
	if code != exitInvalid || !strings.Contains(errs, "--prefix-cache-hit 1.5 (150%): want a fraction in [0, 1]") {
		t.Errorf("--prefix-cache-hit 1.5: exit %d, stderr %s", code, errs)
	}
}
