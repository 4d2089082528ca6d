package load

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestFinishedStreamWithoutDone: TGI's OpenAI API sent no data: [DONE]
// before its 2.2 (PR 2221, July 2024): a chat stream's last chunk carries
// finish_reason ("length", or TGI's "eos_token"), then the stream ends
// cleanly. Every such request failed "cut off ... without data: [DONE]",
// the point all errors, though the answer was whole (vllm bench serve
// counts it). A stream whose last chunk gave a finish_reason is complete,
// [DONE] or not: 3 text chunks, usage 3 tokens. One ended without a
// finish_reason (the server died between tokens) is still cut off, and so
// is one with finish_reason null or "" on every chunk (TGI 2.2's
// completions sent "" until its PR 2336).
func TestFinishedStreamWithoutDone(t *testing.T) {
	chunk := func(text, finish string) string {
		return fmt.Sprintf("data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q},\"finish_reason\":%s}]}\n\n", text, finish)
	}
	for _, tc := range []struct {
		name, stream, want string
	}{
		{"length", chunk("a", "null") + chunk("b", "null") + chunk("c", `"length"`), ""},
		{"eos_token with usage", chunk("a", "null") + chunk("b", "null") + chunk("c", `"eos_token"`) +
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3}}\n\n", ""},
		{"no finish_reason", chunk("a", "null") + chunk("b", "null") + chunk("c", "null"), "cut off: the stream ended after 3 text chunks without data: [DONE]"},
		{"empty finish_reason", chunk("a", `""`) + chunk("b", `""`) + chunk("c", `""`), "cut off: the stream ended after 3 text chunks without data: [DONE]"},
	} {
		r := oneStream(t, tc.name, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tc.stream) },
			func(c *Config) { c.Chat, c.MaxTokens = true, 3 })
		switch {
		case tc.want != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.want)):
			t.Errorf("%s: error %v; want %q", tc.name, r.Err, tc.want)
		case tc.want == "" && (r.Err != nil || r.OutputTokens != 3 || len(r.ITL) != 2):
			t.Errorf("%s: error %v, %d output tokens, %d intervals; want a success of 3 tokens, 2 intervals", tc.name, r.Err, r.OutputTokens, len(r.ITL))
		}
	}
}
