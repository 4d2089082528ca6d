package tune

import (
	"encoding/json"
	"strings"

	"github.com/goccy/go-yaml/token"
)

// YAMLScalar is s as a YAML scalar that loads back as the string s, in
// block or flow context: as is when it is made of letters, digits and
// ._/- only (catalog names, Hugging Face repositories, plain paths) and
// go-yaml would not read it as anything but a string (not true, null, a
// number or a timestamp); JSON-quoted (a YAML double-quoted scalar) when it
// holds a control character; else single-quoted (a quote doubled). "" is ”.
func YAMLScalar(s string) string {
	if s != "" && !strings.HasPrefix(s, "-") && !token.IsNeedQuoted(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/-", r))
	}) {
		return s
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		q, _ := json.Marshal(s)
		return string(q)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
