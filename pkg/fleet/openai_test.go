package fleet

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replica"
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
	// max_model_len is Meta-Llama-3-8B's context, 8192 (TestModelsMaxModelLen):
	// "x" is 1 prompt token, so 8191 output tokens fit and 8192 do not, as
	// vLLM refuses a request beyond the max_model_len /v1/models reports.
	if r := post(t, f.URL()+"/v1/completions", `{"prompt":"x","max_tokens":8192}`); r.StatusCode != 400 {
		t.Errorf("1 + 8192 tokens, above max_model_len 8192: %d, want 400", r.StatusCode)
	}
	if r := post(t, f.URL()+"/v1/completions", `{"prompt":"x","max_tokens":8191,"stream":true}`); r.StatusCode != 200 {
		t.Errorf("1 + 8191 tokens, max_model_len 8192: %d, want 200", r.StatusCode)
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

// TestModelsMaxModelLen: /v1/models reports the model's context length as
// vLLM does (max_position_embeddings of its config.json), not the KV
// cache's capacity. By hand: Meta-Llama-3-8B's config.json says 8192
// (the KV cache of the default H100 replica holds far more: (0.9 x 80 GB -
// 16 GB weights - 4 GB reserve) / 128 KiB per token = 396,728 tokens);
// Llama-3.1-8B's says 131072. On an L4 (24 GB) the 3.1 model's KV cache
// holds (21.6 - 16 - 4) GB / 131072 B = 12,207 tokens, below its context:
// a vLLM there runs with max_model_len <= 12,207, so that is reported.
func TestModelsMaxModelLen(t *testing.T) {
	gpu := func(name string) replica.GPU {
		g, err := replica.LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	model := func(name string) replica.Model {
		m, err := replica.LookupModel(name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		gpu, model string
		want       int64
	}{
		{"h100-sxm", "llama-3-8b", 8192},
		{"h100-sxm", "llama-3.1-8b", 131072},
		{"l4", "llama-3.1-8b", 12207},
	} {
		cfg := replica.DefaultConfig()
		cfg.GPU, cfg.Model = gpu(c.gpu), model(c.model)
		r, err := replica.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Start(context.Background(), Config{Replicas: 1, Max: 1, Replica: r})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(f.URL() + "/v1/models")
		if err != nil {
			f.Stop()
			t.Fatal(err)
		}
		var list struct {
			Data []struct {
				ID          string `json:"id"`
				MaxModelLen int64  `json:"max_model_len"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		f.Stop()
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Data) != 1 || list.Data[0].MaxModelLen != c.want {
			t.Errorf("%s on %s: /v1/models %+v, want max_model_len %d", c.model, c.gpu, list.Data, c.want)
		}
	}
}
