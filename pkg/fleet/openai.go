package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/infscale/infscale/pkg/replica"
)

// The OpenAI-compatible API a vLLM server offers, as far as load tests use
// it: POST /v1/completions and /v1/chat/completions (streaming as
// server-sent events, or not), GET /v1/models and GET /health. Every
// request generates exactly its max_tokens (vLLM's ignore_eos, as load
// tests set it); prompt tokens are counted one per whitespace-separated
// word (the fleet has no tokenizer), and `usage` reports both counts.

// contextTokens is each catalog model's (replica.LookupModel's names)
// context length: max_position_embeddings in its Hugging Face config.json,
// which vLLM takes as --max-model-len when none is given.
var contextTokens = map[string]int64{
	"llama-3-8b":    8192,
	"llama-3.1-8b":  131072,
	"llama-3.1-70b": 131072,
	"llama-2-7b":    4096,
	"qwen2.5-7b":    32768,
	"qwen2.5-72b":   32768,
	"qwen3-8b":      40960,
	"mistral-7b":    32768,
	"mixtral-8x7b":  32768,
}

// MaxModelLen is the max_model_len vLLM's /v1/models reports for r, in
// tokens: the model's context length, capped at the KV cache's capacity
// (vLLM does not start with a max_model_len its KV cache cannot hold one
// sequence of); the KV capacity for a model outside the catalog. A request
// whose prompt and output tokens exceed it is refused, as vLLM refuses it.
func MaxModelLen(r *replica.Replica) int64 {
	kv := r.KVCapacityTokens()
	if n, ok := contextTokens[r.Config().Model.Name]; ok && n < kv {
		return n
	}
	return kv
}

// maxBody bounds a request body.
const maxBody = 4 << 20

// completionRequest is the subset of the OpenAI request the fleet reads.
type completionRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// usage is OpenAI's token accounting.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

var requestIDs atomic.Uint64

// words counts the prompt tokens of a JSON string, array of strings, or
// array of content parts ({"type": "text", "text": ...}).
func words(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return len(strings.Fields(s)), nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return 0, errors.New("want a string or an array")
	}
	n := 0
	for _, item := range list {
		var part struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(item, &s); err == nil {
			n += len(strings.Fields(s))
		} else if err := json.Unmarshal(item, &part); err == nil {
			n += len(strings.Fields(part.Text))
		} else {
			return 0, errors.New("want strings or content parts")
		}
	}
	return n, nil
}

// apiError writes vLLM's error body.
func apiError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	kind := "BadRequestError"
	switch code {
	case http.StatusNotFound:
		kind = "NotFoundError"
	case http.StatusServiceUnavailable:
		kind = "ServiceUnavailableError"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "error", "message": fmt.Sprintf(format, args...), "type": kind, "param": nil, "code": code})
}

// api serves the OpenAI routes; pick chooses the replica for a new request
// under f.mu (nil: none ready).
func (f *Fleet) api(w http.ResponseWriter, r *http.Request, pick func(now time.Time) *slot) {
	switch r.URL.Path {
	case "/health":
		f.mu.Lock()
		s := pick(time.Now())
		f.mu.Unlock()
		if s == nil {
			http.Error(w, "no replica ready", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	case "/v1/models":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{
			"id": f.cfg.Model, "object": "model", "owned_by": "infscale-fleet", "max_model_len": MaxModelLen(f.cfg.Replica)}}})
	case "/v1/completions", "/v1/chat/completions":
		if r.Method != http.MethodPost {
			apiError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		f.complete(w, r, r.URL.Path == "/v1/chat/completions", pick)
	default:
		apiError(w, http.StatusNotFound, "no route %s", r.URL.Path)
	}
}

func (f *Fleet) complete(w http.ResponseWriter, r *http.Request, chat bool, pick func(now time.Time) *slot) {
	arrived := time.Now()
	var req completionRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		apiError(w, http.StatusBadRequest, "request body: %v", err)
		return
	}
	if req.Model != "" && req.Model != f.cfg.Model {
		apiError(w, http.StatusNotFound, "The model `%s` does not exist.", req.Model)
		return
	}
	prompt := 0
	if chat {
		if len(req.Messages) == 0 {
			apiError(w, http.StatusBadRequest, "messages: want at least one")
			return
		}
		for i, m := range req.Messages {
			n, err := words(m.Content)
			if err != nil {
				apiError(w, http.StatusBadRequest, "messages[%d].content: %v", i, err)
				return
			}
			prompt += n
		}
	} else {
		n, err := words(req.Prompt)
		if err != nil {
			apiError(w, http.StatusBadRequest, "prompt: %v", err)
			return
		}
		prompt = n
	}
	prompt = max(prompt, 1) // a BOS token at least
	output := 16            // OpenAI's and vLLM's completions default
	if chat {
		output = f.cfg.OutputTokens
	}
	if req.MaxCompletionTokens != nil {
		output = *req.MaxCompletionTokens
	}
	if req.MaxTokens != nil {
		output = *req.MaxTokens
	}
	limit := MaxModelLen(f.cfg.Replica)
	if output < 1 {
		apiError(w, http.StatusBadRequest, "max_tokens must be at least 1, got %d", output)
		return
	}
	if int64(prompt)+int64(output) > limit {
		apiError(w, http.StatusBadRequest, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).", limit, prompt+output, prompt, output)
		return
	}
	st := newStream()
	q := &request{arrived: arrived, prompt: prompt, output: output, remaining: output, client: st}
	f.mu.Lock()
	s := pick(q.arrived)
	if s != nil {
		s.engine.waiting = append(s.engine.waiting, q)
		s.kick()
	}
	f.mu.Unlock()
	if s == nil {
		apiError(w, http.StatusServiceUnavailable, "no replica ready")
		return
	}
	id := requestIDs.Add(1)
	idText := fmt.Sprintf("cmpl-%d", id)
	object := "text_completion"
	if chat {
		idText, object = fmt.Sprintf("chatcmpl-%d", id), "chat.completion"
	}
	created := q.arrived.Unix()
	u := usage{PromptTokens: prompt, CompletionTokens: output, TotalTokens: prompt + output}
	ctx := r.Context()
	// wait blocks until the engine produces more or the client leaves
	// (false: abandoned).
	wait := func() bool {
		select {
		case <-ctx.Done():
			st.abandon()
			return false
		case <-st.wake:
			return true
		}
	}
	if !req.Stream {
		for {
			if _, done := st.since(0); done {
				break
			}
			if !wait() {
				return
			}
		}
		text := strings.Repeat(tokenText, output)
		choice := map[string]any{"index": 0, "text": text, "logprobs": nil, "finish_reason": "length"}
		if chat {
			choice = map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "length"}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": idText, "object": object, "created": created, "model": f.cfg.Model, "choices": []any{choice}, "usage": u})
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	chunkObject := object
	if chat {
		chunkObject = "chat.completion.chunk"
	}
	event := func(choices []any, u *usage) error {
		m := map[string]any{"id": idText, "object": chunkObject, "created": created, "model": f.cfg.Model, "choices": choices}
		if u != nil {
			m["usage"] = u
		}
		b, _ := json.Marshal(m)
		_, err := fmt.Fprintf(w, "data: %s\n\n", b)
		return err
	}
	sent := 0
	for sent < output {
		more, done := st.since(sent)
		for range more {
			sent++
			var finish any
			if sent == output {
				finish = "length"
			}
			choice := map[string]any{"index": 0, "text": tokenText, "logprobs": nil, "finish_reason": finish}
			if chat {
				delta := map[string]any{"content": tokenText}
				if sent == 1 {
					delta["role"] = "assistant"
				}
				choice = map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}
			}
			if err := event([]any{choice}, nil); err != nil {
				st.abandon()
				return
			}
		}
		if more > 0 && flusher != nil {
			flusher.Flush()
		}
		if done && sent < output {
			return // dropped (the fleet was cancelled or the replica removed)
		}
		if sent >= output {
			break
		}
		if !wait() {
			return
		}
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		_ = event([]any{}, &u)
	}
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// tokenText is the text of every generated token.
const tokenText = " hello"
