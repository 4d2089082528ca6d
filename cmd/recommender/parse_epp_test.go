package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/epptest"
)

// TestParseEPP: `infscale parse` auto-detects an llm-d EPP page (built
// from llm-d-router ebab687927f5's families, both names) and prints the
// pool: 3 ready endpoints with averages 10.33 running and 2.33 waiting ->
// 31 and 7; 3 + 2 = 5 held in flow control (the twin not added); 30 + 8 =
// 38 in flight; effective saturation 1.15 (no stale endpoint: load).
func TestParseEPP(t *testing.T) {
	page := epptest.Page(epptest.State{Pool: "chat", Model: "llama",
		Endpoints: []epptest.Endpoint{{Name: "chat-0", Fresh: true, Running: 10, Waiting: 2, KV: 0.5},
			{Name: "chat-1", Fresh: true, Running: 12, Waiting: 5, KV: 0.6}, {Name: "chat-2", Fresh: true, Running: 9, KV: 0.7}},
		RequestRunning: map[string]float64{"": 30, "tenant-b": 8},
		Flows:          []epptest.Flow{{FairnessID: "a", Priority: "0", Held: 3}, {FairnessID: "b", Priority: "-1", Held: 2}},
		Saturation:     map[string]float64{"prefill": 0.8, "decode": 1.15, "effective": 1.15},
		Requests:       1500, InputTokens: 1.5e6, OutputTokens: 3e5})
	path := filepath.Join(t.TempDir(), "epp.prom")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"parse", path}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `llm-d EPP of pool "chat": 3 ready endpoints, 5 held in flow control, 38 in flight, saturation 1.15`) ||
		!strings.Contains(out.String(), "epp     31       7        0.6") {
		t.Errorf("text:\n%s", out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"parse", "--output", "json", path}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []struct {
		Server string `json:"server"`
		Pool   struct {
			Ready     float64  `json:"ready_endpoints"`
			Flow      float64  `json:"flow_control_queue"`
			Effective *float64 `json:"effective_saturation"`
		} `json:"pool"`
	}
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Server != "epp" || rows[0].Pool.Ready != 3 || rows[0].Pool.Flow != 5 || rows[0].Pool.Effective == nil || *rows[0].Pool.Effective != 1.15 {
		t.Errorf("json: %s", out.String())
	}
}

// TestParseEPPFlowQueueNotRead: a page whose flow-control queue is declared
// a counter prints held "-" and a note saying why (the reason serve gives
// its held error), not a silent "-".
func TestParseEPPFlowQueueNotRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "epp.prom")
	page := "llm_d_epp_ready_endpoints{name=\"chat\"} 1\n# TYPE llm_d_epp_flow_control_queue_size counter\nllm_d_epp_flow_control_queue_size{inference_pool=\"chat\"} 4\n"
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"parse", "--server", "epp", path}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := path + ": flow-control queue not read: llm_d_epp_flow_control_queue_size is declared a counter, infscale reads it as a gauge"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "- held in flow control") {
		t.Errorf("text:\n%s\nwant a note with %q", out.String(), want)
	}
}
