package statefile

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// TestDecodeRecordsTopLevel: reading a valid state records the positions
// of its top-level keys (File.validate's), not one map entry per value: a
// 15 MiB file of 330,000 recommendations took 320 MB to read (decide's and
// serve's peak; the chart gives serve 128 Mi), 150 MB now. A refused
// file's errors still name line and column: its second walk records every
// path (TestDecodeErrors; here one at the 20,000th recommendation).
func TestDecodeRecordsTopLevel(t *testing.T) {
	at := time.Unix(1000, 0).UTC()
	st := recommend.State{LastDesired: 1, LastAt: at, FirstSeen: at, LastActive: at}
	for range 20000 {
		st.Recommendations = append(st.Recommendations, recommend.TimedReplicas{At: at, Replicas: 1})
	}
	data, err := json.Marshal(File{Version: 1, Desired: 1, Current: 1, State: st, SavedAt: at})
	if err != nil {
		t.Fatal(err)
	}
	w, err := walk(data, reflect.TypeFor[File](), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.pos) > 6 { // "", version, desired, current, state, saved_at
		t.Errorf("%d positions recorded for a valid file; want the top level's 6", len(w.pos))
	}
	if _, err := Decode(data, "big.json"); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), `"replicas":1}]`, `"replicas":-1}]`, 1)
	_, err = Decode([]byte(bad), "bad.json")
	off := strings.Index(bad, `"replicas":-1}]`) + len(`"replicas":`)
	want := "bad.json: line 1:" + strconv.Itoa(off+1) + ": state.recommendations[19999].replicas: -1 must be in 0..2147483647"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v; want %q", err, want)
	}
}

// BenchmarkDecodeLarge reads a 2.6 MB state of 65,536 recommendations
// (the size a one-hour window decided every 55 ms reaches; serve's cycle is
// seconds): B/op is what one read allocates, beside the file's own bytes.
// Figures: docs/evaluation/PERFORMANCE.md, "State files (...)".
func BenchmarkDecodeLarge(b *testing.B) {
	at := time.Unix(1000, 0).UTC()
	st := recommend.State{LastDesired: 1, LastAt: at, FirstSeen: at, LastActive: at}
	for i := range 1 << 16 {
		st.Recommendations = append(st.Recommendations, recommend.TimedReplicas{At: at.Add(time.Duration(i-(1<<16)) * time.Second), Replicas: 3})
	}
	data, err := json.Marshal(File{Version: 1, Desired: 3, Current: 3, State: st, SavedAt: at})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data, "big.json"); err != nil {
			b.Fatal(err)
		}
	}
}
