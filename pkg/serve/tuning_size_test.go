package serve

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/replay"
)

// TestTuningSizerLogsNote: a run's sizing is Size's answer as given, and
// what Size says (the note tune --shard prints on stderr) is one warning
// naming the target, without the "note: " prefix; a Size that says
// nothing logs nothing.
func TestTuningSizerLogsNote(t *testing.T) {
	tn := NewTuning(prometheus.NewRegistry())
	var log buftest.Buffer
	tn.Log = slog.New(slog.NewTextHandler(&log, nil))
	var asked []int64
	tn.Size = func(w io.Writer, n, pools int, _ bool, requests func() int64) replay.Sizing {
		asked = append(asked, int64(n), int64(pools), requests())
		if n > 1 {
			fmt.Fprintln(w, "note: one replay at its backlog bound takes more than this process may still take")
			return replay.Sizing{AtOnce: 1, Backlog: 7, SearchAtOnce: 1}
		}
		return replay.Sizing{AtOnce: 1, Backlog: replay.MaxBacklog}
	}
	got := tn.sizer("chat")(2, 1, false, func() int64 { return 1200 })
	if want := (replay.Sizing{AtOnce: 1, Backlog: 7, SearchAtOnce: 1}); got != want {
		t.Errorf("sizing %+v, want Size's %+v", got, want)
	}
	if len(asked) != 3 || asked[0] != 2 || asked[1] != 1 || asked[2] != 1200 {
		t.Errorf("Size asked (n, pools, requests) = %v, want [2 1 1200]", asked)
	}
	want := `level=WARN msg="tuning run sized to the memory limit" target=chat note="one replay at its backlog bound takes more than this process may still take"`
	if !strings.Contains(log.String(), want) {
		t.Errorf("log %q: want %s", log.String(), want)
	}
	before := log.String()
	tn.sizer("chat")(1, 1, false, func() int64 { return 10 })
	if log.String() != before {
		t.Errorf("a sizing that costs nothing logged %q, want nothing", log.String())
	}
}
