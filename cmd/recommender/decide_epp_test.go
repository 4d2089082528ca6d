package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/infscale/infscale/internal/epptest"
)

// TestDecideEPPPage: an llm-d EPP's page given to decide (detected, or
// with --server epp) was counted as one replica: current 1 for a pool of
// two ready endpoints, its pool totals as that replica's load. It is
// refused, exit 2, naming the file and what to give instead; so is it
// with --server vllm.
func TestDecideEPPPage(t *testing.T) {
	page := filepath.Join(t.TempDir(), "epp.prom")
	st := epptest.State{Pool: "chat", Model: "llama", Endpoints: []epptest.Endpoint{
		{Name: "chat-0", Fresh: true, Running: 10, Waiting: 3, KV: 0.5},
		{Name: "chat-1", Fresh: true, Running: 12, Waiting: 5, KV: 0.7},
	}}
	if err := os.WriteFile(page, []byte(epptest.Page(st)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"decide", "--target", "8", page},
		{"decide", "--target", "8", "--server", "epp", page},
		// Read as vLLM's, it said "give the server as epp ... or auto",
		// both refused above.
		{"decide", "--target", "8", "--server", "vllm", page},
	} {
		wantRefused(t, args, nil, page+": an llm-d Endpoint Picker's page: it describes its whole InferencePool",
			"give the pool's model-server pages, or read it with `infscale parse "+page+"`")
	}
	// On stdin the hint gives parse's "-" (it said `infscale parse stdin`,
	// a file of that name).
	body, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, []string{"decide", "--target", "8", "-"}, bytes.NewReader(body), "stdin: an llm-d Endpoint Picker's page", "read it with `infscale parse -`")
}
