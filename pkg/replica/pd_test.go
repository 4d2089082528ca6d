package replica

import (
	"math"
	"testing"
)

// TestPD: the reference replica (Llama-3-8B FP16 on one H100: docs/design.md's
// 24,750 prefill tokens/s, 396,728 KV tokens, batch 64) at 10 requests/s
// of 2,000-token prompts and 200-token outputs, KV over 25 GB/s:
//
//	prefill busy 10 x 2000 / 24750 = 0.808 replica
//	decode slots min(64, 396728 / 2200 = 180) = 64
//	KV per token 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 B;
//	one prompt 2000 x 131072 = 262,144,000 B, 10.49 ms at 25 GB/s
//	decode: the step of 64 sequences of 2,100 tokens is above the 10.4 ms
//	of 1,000-token contexts; 10 x 200 x step sequences, under one replica.
func TestPD(t *testing.T) {
	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.PD(10, 2000, 200, 25e9)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.PrefillBusy-0.808) > 0.005 {
		t.Errorf("prefill busy %v, want 0.808", p.PrefillBusy)
	}
	if p.DecodeSlots != 64 {
		t.Errorf("decode slots %d, want 64", p.DecodeSlots)
	}
	if p.TransferBytes != 262144000 || math.Abs(p.TransferSeconds-0.01048576) > 1e-9 {
		t.Errorf("transfer %v B in %v s, want 262144000 B in 0.01048576 s", p.TransferBytes, p.TransferSeconds)
	}
	if p.StepSeconds <= 0.0104 || p.StepSeconds > 0.05 {
		t.Errorf("step %v s, want above the 10.4 ms of 1,000-token contexts and well under 50 ms", p.StepSeconds)
	}
	if want := 10 * 200 * p.StepSeconds; math.Abs(p.DecodeSequences-want) > 1e-9 || p.DecodeBusy >= 1 {
		t.Errorf("decode %v sequences (busy %v), want 2000 x step = %v, under one replica", p.DecodeSequences, p.DecodeBusy, want)
	}
	for _, bad := range []struct {
		rate    float64
		in, out int
		link    float64
		what    string
	}{{0, 10, 10, 1, "rate"}, {1, 0, 10, 1, "prompt"}, {1, 10, 10, 0, "KV link"}, {1, 400000, 10, 1, "does not fit"}} {
		if _, err := r.PD(bad.rate, bad.in, bad.out, bad.link); err == nil {
			t.Errorf("%+v: no error, want one about %s", bad, bad.what)
		}
	}
}
