package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestOpenAIStream streams one completion from the reference replica: a
// 40-word prompt counts 40 prompt tokens; 8 tokens come as 8 text chunks,
// then a usage chunk (include_usage) and [DONE]. The first token comes
// after the prefill, 40 / 24750 tokens/s = 1.6 ms, the others one decode
// step (6.83 ms) apart: 8 tokens take at least 1.6 + 7 x 6.83 = 49 ms.
func TestOpenAIStream(t *testing.T) {
	f, err := Start(context.Background(), Config{Replicas: 1, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	prompt := strings.TrimSpace(strings.Repeat("word ", 40))
	start := time.Now()
	resp := post(t, f.URL()+"/v1/completions", `{"model":"meta-llama/Meta-Llama-3-8B","prompt":"`+prompt+`","max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	var texts int
	var u *usage
	done := false
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var c struct {
			Choices []struct {
				Text         string  `json:"text"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *usage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		if len(c.Choices) > 0 && c.Choices[0].Text != "" {
			texts++
			if (texts == 8) != (c.Choices[0].FinishReason != nil) {
				t.Errorf("chunk %d finish_reason %v", texts, c.Choices[0].FinishReason)
			}
		}
		if c.Usage != nil {
			u = c.Usage
		}
	}
	took := time.Since(start)
	if !done || texts != 8 || u == nil || *u != (usage{PromptTokens: 40, CompletionTokens: 8, TotalTokens: 48}) {
		t.Errorf("done %v, %d text chunks, usage %+v; want [DONE], 8, {40 8 48}", done, texts, u)
	}
	if took < 49*time.Millisecond {
		t.Errorf("8 tokens in %v, want >= 49 ms", took)
	}
}

// TestOpenAIErrors: chat without streaming, a wrong model (404), a request
// longer than the KV cache (400), no replica ready (503 on the API and on
// /health).
func TestOpenAIErrors(t *testing.T) {
	f, err := Start(context.Background(), Config{Replicas: 1, Max: 2, OutputTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	resp := post(t, f.URL()+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hello there"}]}`)
	var out struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage usage `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Object != "chat.completion" || out.Usage != (usage{2, 3, 5}) || out.Choices[0].Message.Content != " hello hello hello" {
		t.Errorf("chat: %v %+v", err, out)
	}
	if r := post(t, f.URL()+"/v1/completions", `{"model":"other","prompt":"x"}`); r.StatusCode != 404 {
		t.Errorf("wrong model: %d, want 404", r.StatusCode)
	}
	if r := post(t, f.URL()+"/v1/completions", `{"prompt":"x","max_tokens":396728}`); r.StatusCode != 400 {
		t.Errorf("longer than the KV cache (396,728 tokens): %d, want 400", r.StatusCode)
	}
	if r := post(t, f.URL()+"/v1/completions", `{"prompt":"x","max_tokens":0}`); r.StatusCode != 400 {
		t.Errorf("max_tokens 0: %d, want 400", r.StatusCode)
	}
	if code, _ := fetch(t, f.URL()+"/health"); code != 200 {
		t.Errorf("health with a replica: %d", code)
	}
	f.SetDesired(0)
	if code, _ := fetch(t, f.URL()+"/health"); code != 503 {
		t.Errorf("health with none: %d, want 503", code)
	}
	if r := post(t, f.URL()+"/v1/completions", `{"prompt":"x"}`); r.StatusCode != 503 {
		t.Errorf("no replica: %d, want 503", r.StatusCode)
	}
}
