package serve

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestRecordFieldsDocumented: every key a decision record (/debug/decisions,
// an --audit-log line) can carry is named in docs/serve.md, so a reader of
// the audit log finds what each means: the record's own keys and those of
// its signals (prompt_tokens_per_second and the other demand signals were
// written but not documented).
func TestRecordFieldsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, typ := range []reflect.Type{reflect.TypeFor[Record](), reflect.TypeFor[Signals]()} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !strings.Contains(doc, "`"+name+"`") && !strings.Contains(doc, `"`+name+`"`) {
				t.Errorf("docs/serve.md does not name the record key %q (%s.%s)", name, typ.Name(), typ.Field(i).Name)
			}
		}
	}
}
