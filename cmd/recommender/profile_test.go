package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/history"
)

// testProfile profiles the whole synthetic week: the generator peaks at
// 15:00 UTC and runs weekends at 0.4 of weekdays (history.Config defaults).
func testProfile(t *testing.T, url string, truth history.Truth) {
	args := []string{"profile", "--prometheus-url", url, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(truth.Start.Unix()), "--end", fmt.Sprint(truth.End.Unix()), "--step", "2m",
		"--no-simulate", "--output", "json"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var p struct {
		PeakHour          int              `json:"peak_hour"`
		WeekendRatio      float64          `json:"weekend_ratio"`
		VarianceExplained float64          `json:"variance_explained"`
		Days              float64          `json:"days"`
		Floor             map[string][]int `json:"floor"`
		Schedule          []struct {
			Cron string `json:"cron"`
			Min  int    `json:"min"`
		} `json:"schedule"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if p.PeakHour != truth.PeakHour {
		t.Errorf("peak hour %d, want %d", p.PeakHour, truth.PeakHour)
	}
	// Weekend traffic is 0.4 of weekday traffic at every hour; the spike
	// (Wednesday, +2 × rate for 30 min) lifts weekdays by ~0.3%.
	if math.Abs(p.WeekendRatio-truth.WeekendFactor) > 0.02 {
		t.Errorf("weekend ratio %.3f, want %.2f", p.WeekendRatio, truth.WeekendFactor)
	}
	// The generated rate is exactly day factor × hour shape (plus Poisson
	// noise and one spike): the separable model explains nearly all of it.
	if p.VarianceExplained < 0.95 {
		t.Errorf("variance explained %.3f, want >= 0.95", p.VarianceExplained)
	}
	// Friday 16:00 lost 20 of its 60 minutes to the gap and still counts
	// (>= half the hour known); 7 days less nothing.
	if p.Days < 6.9 || p.Days > 7.01 {
		t.Errorf("days %.2f, want about 7", p.Days)
	}
	// Floors are higher at the weekday peak than on Saturday's.
	if p.Floor["Mon"][15] <= p.Floor["Sat"][15] || p.Floor["Mon"][15] <= p.Floor["Mon"][3] {
		t.Errorf("floors Mon 15h %d, Sat 15h %d, Mon 3h %d: want the weekday peak highest", p.Floor["Mon"][15], p.Floor["Sat"][15], p.Floor["Mon"][3])
	}
	// The Wednesday spike happens once: no window may come from it (a window
	// must recur, seasonal.MinDays / MinWeeks).
	spike := truth.Spike[0].UTC()
	for _, w := range p.Schedule {
		if w.Cron == fmt.Sprintf("0 %d * * %d", spike.Hour(), spike.Weekday()) {
			t.Errorf("window %s at %d: proposed from the one spike", w.Cron, w.Min)
		}
	}

	// Three days with the replays: reactive only, schedule only, both
	// (three, as a window must recur on seasonal.MinDays days). With
	// queue:8 a replica holds 8 requests, about 4 req/s, so the afternoon
	// (about 20 req/s) gets a floor of floor(0.8 × 20 / 4) = 3-4 replicas.
	day := truth.Start.Add(24 * time.Hour)
	args = []string{"profile", "--prometheus-url", url, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(day.Unix()), "--end", fmt.Sprint(day.Add(3 * 24 * time.Hour).Unix()), "--step", "2m", "--policy", "queue:8"}
	out.Reset()
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, s := range []string{"occurrences support it", "schedule:", "type: cron", "queue:8 (reactive only)", "schedule only", "queue:8 + schedule", "peak hour"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text output lacks %q", s)
		}
	}
	t.Logf("\n%s", out.String())

	// One day: no hour can recur on seasonal.MinDays = 3 days, so there is
	// no window and no schedule to add; the replay says so and has no
	// "both" row (it announced one).
	args = []string{"profile", "--prometheus-url", url, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(day.Unix()), "--end", fmt.Sprint(day.Add(24 * time.Hour).Unix()), "--step", "2m", "--policy", "queue:8"}
	out.Reset()
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("one day: exit %d: %s", code, errb.String())
	}
	for _, s := range []string{"  none: no hour needs more", "no schedule to add to the reactive policy, so no \"both\" row", "queue:8 (reactive only)", "schedule only"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("one day: text output lacks %q:\n%s", s, out.String())
		}
	}
	if strings.Contains(out.String(), "queue:8 + schedule") || strings.Contains(out.String(), "schedule only, both") {
		t.Errorf("one day: a \"both\" row or its announcement without a schedule:\n%s", out.String())
	}
}

// TestHistoryFlagsDocumented: every flag of backtest and profile (except
// the replica flags, docs/replica.md's) appears in docs/backtest.md.
func TestHistoryFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/backtest.md")
	if err != nil {
		t.Skipf("docs/backtest.md not readable: %v", err)
	}
	var names []string
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Type == reflect.TypeOf(ReplicaFlags{}) || !f.IsExported() {
				continue
			}
			if _, ok := f.Tag.Lookup("embed"); ok {
				walk(f.Type)
				continue
			}
			n := f.Tag.Get("name")
			if n == "" { // kong's default: the field name in kebab case
				for i, r := range f.Name {
					if i > 0 && r >= 'A' && r <= 'Z' {
						n += "-"
					}
					n += strings.ToLower(string(r))
				}
			}
			names = append(names, n)
		}
	}
	walk(reflect.TypeOf(BacktestCmd{}))
	walk(reflect.TypeOf(ProfileCmd{}))
	for _, n := range names {
		if !strings.Contains(string(doc), "`--"+n) {
			t.Errorf("docs/backtest.md does not document --%s", n)
		}
	}
}
