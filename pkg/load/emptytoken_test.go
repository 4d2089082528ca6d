package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestEmptyTextTokensTimed: vLLM streams a chunk for every token, its text
// "" when the token has none to show (a special token, skipped; a part of
// a character split over tokens), as an instruct model's tokens after its
// end of turn are under ignore_eos. Such chunks were not counted: e2e
// ended at the last chunk with text and TPOT divided that shorter time by
// the usage's tokens. Each answer here (chat and completions alike): the
// role chunk at once (no token: not counted, as before), then tokens "a"
// at 100 ms, "b" at 150, two empty at 200 and 250, an empty one with
// finish_reason length at 300, usage 5 tokens. By vllm bench serve's
// definitions (every chunk with a choice after the first text is a
// token): TTFT 0.1 s, 4 intervals of 0.05 s, e2e 0.3 s, TPOT (0.3 - 0.1) /
// (5 - 1) = 0.05 s; it read e2e 0.15 s, 1 interval, TPOT 0.0125 s.
// llama.cpp's last chunk, "delta": {} with the finish_reason and no text
// field, is no token and not counted either way.
func TestEmptyTextTokensTimed(t *testing.T) {
	for _, chat := range []bool{true, false} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			send := func(s string) { fmt.Fprintf(w, "data: %s\n\n", s); w.(http.Flusher).Flush() }
			tok := func(text, finish string) string {
				if chat {
					return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q},"finish_reason":%s}]}`, text, finish)
				}
				return fmt.Sprintf(`{"choices":[{"index":0,"text":%q,"finish_reason":%s}]}`, text, finish)
			}
			if chat {
				send(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
			}
			for i, text := range []string{"a", "b", "", "", ""} {
				time.Sleep(map[bool]time.Duration{true: 100, false: 50}[i == 0] * time.Millisecond)
				finish := "null"
				if i == 4 {
					finish = `"length"`
				}
				send(tok(text, finish))
			}
			send(`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`) // llama.cpp's: no token
			send(`{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":5}}`)
			send("[DONE]")
		}))
		recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Chat: chat, Concurrency: 1, Requests: 1,
			Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxTokens: 5, PromptTokens: 4})
		srv.Close()
		if err != nil || len(recs) != 1 || recs[0].Err != nil {
			t.Fatalf("chat %v: %v, %+v", chat, err, recs)
		}
		r := recs[0]
		// Late timer wake-ups add up over the server's five sleeps, more so on
		// shared cores: room per sleep, not per figure. A TTFT taken at the
		// role chunk (0 s) or at "b" (0.15 s) is still outside it.
		const room = 0.04
		tpot := (r.E2E - r.TTFT) / float64(r.OutputTokens-1)
		if r.OutputTokens != 5 || len(r.ITL) != 4 || r.TTFT < 0.1 || r.TTFT > 0.1+room || r.E2E < 0.3 || r.E2E > 0.3+5*room || tpot < 0.049 || tpot > 0.05+room {
			t.Errorf("chat %v: TTFT %.3f s, %d intervals %.3f, e2e %.3f s, TPOT %.4f s, %d tokens; want 0.1, 4 of 0.05, 0.3, 0.05, 5",
				chat, r.TTFT, len(r.ITL), r.ITL, r.E2E, tpot, r.OutputTokens)
		}
	}
}
