package serve

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/internal/clocktest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/statefile"
)

// TestStateSavedAcrossClockStepBack: serve decides on the monotonic clock,
// but its state file holds wall times. At t=0 chat wants 3, at t=15 raw 1
// held at 3; at t=30 (monotonic) the wall clock is stepped back 60 s. The
// file saved then held the t=0 and t=15 recommendations dated after the
// t=30 one (and, the hold's dip opened at t=15, after last_at), so every restart until they left the
// history refused it ("before the previous entry's"), starting fresh: for
// a hold's dips (the last 64) that can last days. Each time is now saved as
// the current wall clock dates it (now minus its monotonic age): t=0 at
// wall -30 - 30 = -60, t=15 at -45, t=30 at -30; the file reads, and a
// restart at t=45 restores desired 3, nothing refused.
func TestStateSavedAcrossClockStepBack(t *testing.T) {
	base := time.Now()
	if s := clocktest.WallMoved(t, base, -time.Minute); !s.Round(0).Equal(base.Round(0).Add(-time.Minute)) || s.Sub(base) != 0 {
		t.Fatalf("stepped: wall %v mono %v", s.Round(0).Sub(base.Round(0)), s.Sub(base))
	}
	clk := base
	now := func() time.Time { return clk }
	dir := t.TempDir()
	store, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	store.Now = now
	// chat with the cost-aware hold: the raw 1 at t=15 opens a dip there.
	cfg, err := config.Parse([]byte(strings.Replace(loopConfig, "  max: 8\n", "  max: 8\n  hold: {break_even: 10m}\n", 1)), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10)) // desired 3 at t=0
	src.set("other", load(1, 5, 0))
	var logs buftest.Buffer
	m1 := NewMetrics(prometheus.NewRegistry(), "test")
	l1 := newLoop(t, LoopOptions{Source: src, Metrics: m1, Interval: 15 * time.Second, Now: now, Store: store})
	if err := l1.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	l1.Cycle(t.Context())
	clk = base.Add(15 * time.Second)
	src.set("chat", load(3, 10, 0)) // raw 1, held at 3
	l1.Cycle(t.Context())
	clk = clocktest.WallMoved(t, base.Add(30*time.Second), -time.Minute)
	l1.Cycle(t.Context())
	if got := desired(t, m1, "chat"); got != 3 {
		t.Fatalf("t=30: desired %v, want 3 (held on the monotonic clock)", got)
	}
	f, err := statefile.Read(filepath.Join(dir, "chat.json"))
	if err != nil {
		t.Fatalf("state saved after the step refused: %v", err)
	}
	w := clk.Round(0)
	if d := f.State.OpenDip; d == nil || d.At.Sub(w) != -15*time.Second {
		t.Errorf("open dip %+v, want one opened at t=15, 15 s before now", d)
	}
	var got []string
	for _, r := range f.State.Recommendations {
		got = append(got, r.At.Sub(w).String())
	}
	if s := strings.Join(got, " "); !strings.HasPrefix(s, "-30s -30s -15s") || !f.State.LastAt.Equal(w) || !f.SavedAt.Equal(w) {
		t.Errorf("recommendations at %s from now, last_at %v, saved_at %v; want -30s -30s -15s ... (t=0 twice: the current count and the first recommendation) and both at now %v", s, f.State.LastAt, f.SavedAt, w)
	}
	clk = clocktest.WallMoved(t, base.Add(45*time.Second), -time.Minute)
	m2 := NewMetrics(prometheus.NewRegistry(), "test")
	l2 := newLoop(t, LoopOptions{Source: src, Metrics: m2, Interval: 15 * time.Second, Now: now, Store: store, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := l2.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := queryErrors(m2, "chat", "state_read"); got != 0 {
		t.Errorf("restart: state_read %v, want 0; log:\n%s", got, logs.String())
	}
	if got := desired(t, m2, "chat"); got != 3 {
		t.Errorf("restart: restored desired %v, want 3", got)
	}
}

// TestRebaseWallEveryTime: rebaseWall dates every time.Time a
// recommend.State holds, a field added later included: each one (every
// slice given one element, every pointer set) at base, with its monotonic
// reading, comes out at now's wall clock (base's monotonic reading, the
// wall stepped back an hour), and st itself is left as it was.
func TestRebaseWallEveryTime(t *testing.T) {
	base := time.Now()
	now := clocktest.WallMoved(t, base, -time.Hour)
	var st recommend.State
	setTimes(reflect.ValueOf(&st).Elem(), base)
	got := rebaseWall(st, now, -time.Hour)
	n := 0
	eachTime(reflect.ValueOf(got), "State", func(path string, v time.Time) {
		n++
		if !v.Equal(base.Round(0).Add(-time.Hour)) {
			t.Errorf("%s = %s, want %s (an hour before %s): not rebased", path, v, base.Round(0).Add(-time.Hour), base.Round(0))
		}
	})
	if n < 15 {
		t.Errorf("%d times found in State, want at least the 15 known", n)
	}
	eachTime(reflect.ValueOf(st), "State", func(path string, v time.Time) {
		if v != base {
			t.Errorf("input %s changed to %s", path, v)
		}
	})
}

var timeType = reflect.TypeFor[time.Time]()

// setTimes sets every time.Time in v to at, giving each nil slice one
// element and each nil pointer a value.
func setTimes(v reflect.Value, at time.Time) {
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(at))
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				setTimes(v.Field(i), at)
			}
		}
	case v.Kind() == reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			setTimes(v.Index(i), at)
		}
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		setTimes(v.Elem(), at)
	case v.Kind() == reflect.Map:
		panic("setTimes: a map in State: give it a key")
	}
}

// eachTime calls f with every time.Time in v and its path.
func eachTime(v reflect.Value, path string, f func(string, time.Time)) {
	switch {
	case v.Type() == timeType:
		f(path, v.Interface().(time.Time))
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if sf := v.Type().Field(i); sf.IsExported() {
				eachTime(v.Field(i), path+"."+sf.Name, f)
			}
		}
	case v.Kind() == reflect.Slice:
		for i := range v.Len() {
			eachTime(v.Index(i), fmt.Sprintf("%s[%d]", path, i), f)
		}
	case v.Kind() == reflect.Pointer:
		if !v.IsNil() {
			eachTime(v.Elem(), path, f)
		}
	}
}

// TestRestoredStateAgesOnMonotonicClock: serve decides at t=0 (chat wants
// 3: its recommendations and scale event are saved dated t=0) and
// restarts at t=60 from its state file. At t=90 (monotonic) the wall
// clock is stepped an hour forward. The restored entries are 90 s old;
// read as the file's wall times they were 1 h 1 min 30 s old, outside
// every window and rate-limit period (an hour back: 30 s ahead of now,
// inside them until the clock caught up). Restored times now carry the
// restart's monotonic reading: 90 s either way.
func TestRestoredStateAgesOnMonotonicClock(t *testing.T) {
	base := time.Now()
	clk := base
	now := func() time.Time { return clk }
	store, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store.Now = now
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10)) // desired 3 at t=0
	src.set("other", load(1, 5, 0))
	l1 := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(prometheus.NewRegistry(), "test"), Interval: 15 * time.Second, Now: now, Store: store})
	if err := l1.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	l1.Cycle(t.Context())
	clk = base.Add(60 * time.Second)
	l2 := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(prometheus.NewRegistry(), "test"), Interval: 15 * time.Second, Now: now, Store: store})
	if err := l2.SetConfig(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	var st recommend.State
	for _, tg := range l2.targets {
		if tg.key == "chat" {
			st = tg.run.State
		}
	}
	if len(st.ScaleUpEvents) == 0 || len(st.Recommendations) == 0 {
		t.Fatalf("restored state has no scale event or recommendation: %+v", st)
	}
	for _, step := range []time.Duration{time.Hour, -time.Hour} {
		later := clocktest.WallMoved(t, base.Add(90*time.Second), step)
		if age := later.Sub(st.ScaleUpEvents[0].At); age != 90*time.Second {
			t.Errorf("clock stepped %v at t=90: the t=0 scale event is %v old, want 90s", step, age)
		}
		if age := later.Sub(st.Recommendations[0].At); age != 90*time.Second {
			t.Errorf("clock stepped %v at t=90: the t=0 recommendation is %v old, want 90s", step, age)
		}
	}
}
