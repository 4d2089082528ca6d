package scrape

import (
	"sync"
	"time"
)

// The stuck-engine rule (docs/serve.md, "Stuck engines") lives here, for
// every mode: a replica is a stuck engine, not load, when requests wait and
// none makes progress. Its evidence is a look of the replica that is
// suspect: the page alone (Page.Suspect: waiting > 0 with running 0 and KV
// 0), or waiting > 0 while no token counter moved since the previous look
// (Flat). A replica suspect on DefaultStuckAfter consecutive looks spanning
// DefaultStuckFor stops voting (StuckTracker: embedded serve). decide reads
// each page once, so there the page rule is the evidence; Prometheus mode
// asks the same condition of Prometheus over a window (pkg/promql's Stuck
// signal: waiting through the whole window, no generation token in it).

// DefaultStuckAfter is how many consecutive scrapes a replica must look
// stuck before it stops voting (serve's ScrapeSource.StuckAfter when 0): two, so a
// single odd page (a request queued at the instant a batch finished) is
// still counted, and a replica stuck for one full interval is not.
const DefaultStuckAfter = 2

// DefaultStuckFor is how long a replica must have looked stuck before it
// stops voting (serve's ScrapeSource.StuckFor when 0), whatever the interval: with
// a 1 s interval, a prefill of a long prompt that moves no counter for 2 s
// is not a stuck engine. One default interval (15 s).
const DefaultStuckFor = 15 * time.Second

// StuckTracker remembers, per scrape URL, how many consecutive scrapes
// looked like a stuck engine and the token counters of the last scrape
// (case C18 of docs/design.md: a vLLM engine with requests waiting that never runs
// them, for an hour; vllm-metal #479, llm-scaler #391).
//
// A scrape looks stuck (suspect) when either
//   - the page itself does (Page.Suspect: waiting > 0 with running 0 and KV
//     0), or
//   - requests wait (waiting > 0) and neither the prompt nor the generation
//     token counter moved since the previous scrape of the URL (flat, the
//     condition of Rates.Suspect too, kept here as two numbers per URL
//     instead of the whole previous page): the Running 1 / Waiting 14 case.
//
// Only the URLs of the last Begin..End round are kept, so replicas that
// went away are forgotten. The zero value is ready; it is safe for
// concurrent Observe calls.
type StuckTracker struct {
	mu   sync.Mutex
	last map[string]stuckMark // by URL, as of the previous Read
	next map[string]stuckMark // being filled by the current Read
}

// stuckMark is what one scrape of a URL leaves for the next.
type stuckMark struct {
	// streak is the number of consecutive suspect scrapes ending here, and
	// since when the replica has looked stuck (the first suspect page, or
	// the scrape before the first flat interval).
	streak int
	since  time.Time
	// at is the scrape's time.
	at time.Time
	// tokens are the page's counters (NaN absent), with their family names.
	prompt, generation       float64
	promptFam, generationFam string
	processStart             float64
}

func markOf(p *Page) stuckMark {
	return stuckMark{prompt: p.PromptTokens, generation: p.GenerationTokens,
		promptFam: p.Chosen.PromptTokens, generationFam: p.Chosen.GenerationTokens, processStart: p.ProcessStart}
}

// Begin starts a round of scrapes: marks not refreshed by it are dropped
// at End.
func (s *StuckTracker) Begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = map[string]stuckMark{}
}

// End finishes a round.
func (s *StuckTracker) End() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.next = s.next, nil
}

// Observe records a successful scrape of url at now and returns the number
// of consecutive suspect scrapes ending with it (0: this one is not
// suspect) and how long the replica has looked stuck.
func (s *StuckTracker) Observe(url string, p *Page, now time.Time) (streak int, stuckFor time.Duration) {
	cur := markOf(p)
	cur.at = now
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, seen := s.last[url]
	isFlat := seen && flat(prev, cur, p.Waiting)
	if p.Suspect != "" || isFlat {
		cur.streak = prev.streak + 1 // prev.streak is 0 when unseen
		switch {
		case prev.streak > 0:
			cur.since = prev.since
		case isFlat:
			cur.since = prev.at // nothing moved since the previous scrape
		default:
			cur.since = now
		}
	}
	if s.next != nil {
		s.next[url] = cur
	}
	if cur.streak == 0 {
		return 0, 0
	}
	return cur.streak, now.Sub(cur.since)
}

// flat reports whether requests wait (waiting > 0) while no token counter
// moved between prev and cur: at least one of prompt and generation is read
// from the same family on both scrapes, every such counter is unchanged, and
// the process did not restart (a restart is not a stuck engine).
func flat(prev, cur stuckMark, waiting float64) bool {
	if !(waiting > 0) {
		return false
	}
	if Restarted(prev.processStart, cur.processStart) {
		return false
	}
	compared := 0
	for _, c := range []struct {
		a, b       float64
		famA, famB string
	}{{prev.prompt, cur.prompt, prev.promptFam, cur.promptFam}, {prev.generation, cur.generation, prev.generationFam, cur.generationFam}} {
		if c.famA == "" || c.famA != c.famB || !finite(c.a) || !finite(c.b) {
			continue
		}
		if c.a != c.b {
			return false
		}
		compared++
	}
	return compared > 0
}
