package fleet

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxBurst bounds one burst of the control API (POST /fleet/burst?n=N):
// the fleet simulates every request in wall time on this machine, so a
// burst stays within what a loopback stand-in serves (the fleet command's
// top --rate for one second).
const MaxBurst = 10000

// State is the fleet at one instant, as GET /fleet/state answers it.
type State struct {
	// Ready replicas serve; Starting ones are in their cold start; Desired
	// is the count the fleet was last asked for.
	Ready    int `json:"ready"`
	Starting int `json:"starting"`
	Desired  int `json:"desired"`
	// Running and Waiting are the requests on the replicas; Pending those
	// in front of them (no replica ready).
	Running int `json:"running"`
	Waiting int `json:"waiting"`
	Pending int `json:"pending"`
	// Served is the number of requests finished since Start.
	Served int `json:"served"`
	// ScrapeFailure is true while every /metrics answers 500.
	ScrapeFailure bool `json:"scrape_failure"`
}

// state is the fleet's State, read under one lock.
func (f *Fleet) state() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := State{Desired: f.desired, Served: int(f.served), ScrapeFailure: f.failing}
	s.Ready, s.Starting = f.readyLocked(time.Now())
	s.Running, s.Waiting, s.Pending = f.loadLocked()
	return s
}

// controlHandler serves the fault-drill API on Config.Control:
//
//	POST /fleet/burst?n=N                 N requests at once, 1..MaxBurst (Inject)
//	POST /fleet/scrape-failure?on=BOOL    every /metrics answers 500 while true (SetFailing)
//	POST /fleet/cancel                    every request dropped: the clients went away (Cancel)
//	GET  /fleet/state                     the State
//
// Each answers 200 with the State after it as JSON. Another method gets
// 405 with Allow, another path 404, a missing, unknown or bad parameter
// 400 naming it and what is allowed (and changes nothing).
func (f *Fleet) controlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fleet/burst", func(w http.ResponseWriter, r *http.Request) {
		v, ok := param(w, r, "n", "a whole number of requests 1.."+strconv.Itoa(MaxBurst))
		if !ok {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxBurst {
			http.Error(w, fmt.Sprintf("n=%s: want a whole number of requests 1..%d", v, MaxBurst), http.StatusBadRequest)
			return
		}
		f.Inject(n)
		writeState(w, f.state())
	})
	mux.HandleFunc("POST /fleet/scrape-failure", func(w http.ResponseWriter, r *http.Request) {
		v, ok := param(w, r, "on", "true or false")
		if !ok {
			return
		}
		if v != "true" && v != "false" {
			http.Error(w, fmt.Sprintf("on=%s: want true or false", v), http.StatusBadRequest)
			return
		}
		f.SetFailing(v == "true")
		writeState(w, f.state())
	})
	mux.HandleFunc("POST /fleet/cancel", func(w http.ResponseWriter, r *http.Request) {
		if !onlyParams(w, r, r.URL.Query()) {
			return
		}
		f.Cancel()
		writeState(w, f.state())
	})
	mux.HandleFunc("GET /fleet/state", func(w http.ResponseWriter, r *http.Request) {
		if !onlyParams(w, r, r.URL.Query()) {
			return
		}
		writeState(w, f.state())
	})
	return mux
}

// param is the query parameter name of r, given once; r takes no other.
// false after a 400 that names what is wrong and says what want is.
func param(w http.ResponseWriter, r *http.Request, name, want string) (string, bool) {
	q := r.URL.Query()
	if !onlyParams(w, r, q, name) {
		return "", false
	}
	if vs := q[name]; len(vs) == 1 {
		return vs[0], true
	}
	http.Error(w, fmt.Sprintf("%s %s: give %s once (?%s=...), %s", r.Method, r.URL.Path, name, name, want), http.StatusBadRequest)
	return "", false
}

// onlyParams answers 400 when q has a parameter outside allowed, naming
// the first (in sorted order) and those r takes.
func onlyParams(w http.ResponseWriter, r *http.Request, q url.Values, allowed ...string) bool {
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains(allowed, name) {
			takes := "no parameter"
			if len(allowed) > 0 {
				takes = strings.Join(allowed, ", ")
			}
			http.Error(w, fmt.Sprintf("%s %s: unknown parameter %q (it takes %s)", r.Method, r.URL.Path, name, takes), http.StatusBadRequest)
			return false
		}
	}
	return true
}

func writeState(w http.ResponseWriter, s State) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}
