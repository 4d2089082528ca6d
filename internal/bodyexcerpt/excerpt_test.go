package bodyexcerpt

import (
	"strings"
	"testing"
)

// nginx is nginx's 502 page with a paragraph added.
const nginx = `<html>
<head><title>502 Bad Gateway</title><style>body { font-family: sans-serif; }</style></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx/1.25.3</center>
<p>The upstream server did not answer.</p>
</body>
</html>
`

// An error body is quoted by an excerpt: an HTML page by the first text
// that is not the status again, anything else by its first line, at most
// 200 bytes.
func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é", 150) // 300 bytes: cut at 200, a whole character
	for _, tc := range []struct{ name, status, ct, body, want string }{
		// title and h1 repeat the status: the next text, more after it.
		{"nginx", "502 Bad Gateway", "text/html", nginx, "nginx/1.25.3 ..."},
		// the title says something else: the title, more after it.
		{"title", "503 Service Unavailable", "text/html; charset=utf-8", "<html><title>Down for maintenance</title><body>Back at 6</body></html>", "Down for maintenance ..."},
		// a page that says only the status: nothing to add.
		{"status only", "404 Not Found", "text/html", "<h1>404 Not Found</h1>", ""},
		{"json", "404 Not Found", "application/json", `{"error":{"message":"model nosuch not found"}}`, `{"error":{"message":"model nosuch not found"}}`},
		{"lines", "500 Internal Server Error", "text/plain", "boom\ntraceback line 1\ntraceback line 2\n", "boom ..."},
		{"long", "500 Internal Server Error", "text/plain", long, strings.Repeat("é", 100) + " ..."},
		{"empty", "500 Internal Server Error", "text/plain", " \n", ""},
		// http.Error(w, "Unauthorized", 401): the status's words again.
		{"status words", "401 Unauthorized", "text/plain; charset=utf-8", "Unauthorized\n", ""},
		{"status again", "404 Not Found", "text/plain", "404 not found", ""},
		// a body that ends like the status says more: quoted.
		{"more than the status", "404 Not Found", "text/plain", "model not found", "model not found"},
		{"html title of the status's words", "401 Unauthorized", "text/html", "<title>Unauthorized</title><p>Sign in at /login</p>", "Sign in at /login"},
	} {
		if got := Excerpt(tc.status, tc.ct, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
