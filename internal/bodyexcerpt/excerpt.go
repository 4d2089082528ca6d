// Package bodyexcerpt quotes the body of a failed HTTP answer in an error
// message: a line of it, never a proxy's screenful of HTML (pkg/load's
// requests, pkg/scrape's /metrics fetches).
package bodyexcerpt

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// Max is the most bytes of an error body a message quotes.
const Max = 200

// Excerpt is what an error message quotes of a failed request's body
// (read up to a few KB) after its status: an HTML page (by contentType, or
// a body that starts with '<') by its title or, when that only repeats the
// status (nginx's "502 Bad Gateway"), its first text that does not; any
// other body by its first non-empty line. At most Max bytes, cut at
// a character, and " ..." when more followed; "" for an empty body or a
// body that says only the status, with or without its code (Go's
// http.Error(w, "Unauthorized", 401)). A proxy's 14-line error page was
// quoted whole.
func Excerpt(status, contentType string, body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	var text string
	more := false
	if strings.Contains(strings.ToLower(contentType), "html") || body[0] == '<' {
		texts := htmlTexts(body)
		for i, t := range texts {
			if !repeats(t, status) {
				text, more = t, i < len(texts)-1
				break
			}
		}
		if text == "" && len(texts) > 0 {
			return "" // the page says the status alone
		}
	}
	if text == "" {
		line, rest, _ := bytes.Cut(body, []byte("\n"))
		text, more = string(bytes.TrimSpace(line)), len(bytes.TrimSpace(rest)) > 0
		if !more && repeats(text, status) {
			return "" // the body says the status alone
		}
	}
	if len(text) > Max {
		cut := Max
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text, more = text[:cut], true
	}
	if more {
		text += " ..."
	}
	return text
}

// repeats reports whether text is status ("401 Unauthorized") again, or
// its words without the code ("Unauthorized").
func repeats(text, status string) bool {
	if status == "" {
		return false
	}
	_, words, _ := strings.Cut(status, " ")
	return strings.EqualFold(text, status) || words != "" && strings.EqualFold(text, words)
}

// htmlTexts are an HTML page's texts (golang.org/x/net/html's tokenizer),
// the title first, then the others in order, without <script> and <style>
// and with runs of white space as one space; at most a few, the most an
// excerpt reads.
func htmlTexts(body []byte) []string {
	const most = 8
	z := html.NewTokenizer(bytes.NewReader(body))
	var title string
	var texts []string
	skip, inTitle := false, false
read:
	for len(texts) < most {
		switch tt := z.Next(); tt {
		case html.ErrorToken: // the end (or a page cut at the read's limit)
			break read
		case html.StartTagToken, html.EndTagToken:
			name, _ := z.TagName()
			start := tt == html.StartTagToken
			switch string(name) {
			case "title":
				inTitle = start
			case "script", "style":
				skip = start
			}
		case html.TextToken:
			t := strings.Join(strings.Fields(string(z.Text())), " ")
			switch {
			case t == "" || skip:
			case inTitle:
				title = t
			default:
				texts = append(texts, t)
			}
		}
	}
	if title != "" {
		return append([]string{title}, texts...)
	}
	return texts
}
