package serve

import (
	"math"
	"sync"
	"time"

	"github.com/infscale/infscale/pkg/scrape"
)

// DefaultStuckAfter is how many consecutive scrapes a replica must look
// stuck before it stops voting (ScrapeSource.StuckAfter when 0): two, so a
// single odd page (a request queued at the instant a batch finished) is
// still counted, and a replica stuck for one full interval is not.
const DefaultStuckAfter = 2

// DefaultStuckFor is how long a replica must have looked stuck before it
// stops voting (ScrapeSource.StuckFor when 0), whatever the interval: with
// a 1 s interval, a prefill of a long prompt that moves no counter for 2 s
// is not a stuck engine. One default interval (15 s).
const DefaultStuckFor = 15 * time.Second

// stuckTracker remembers, per scrape URL, how many consecutive scrapes
// looked like a stuck engine and the token counters of the last scrape
// (case C18 of docs/design.md: a vLLM engine with requests waiting that never runs
// them, for an hour; vllm-metal #479, llm-scaler #391).
//
// A scrape looks stuck (suspect) when either
//   - the page itself does (scrape.Page.Suspect: waiting > 0 with running 0
//     and KV 0), or
//   - requests wait (waiting > 0) and neither the prompt nor the generation
//     token counter moved since the previous scrape of the URL (the
//     condition of scrape.Rates.Suspect, kept here as two numbers per URL
//     instead of the whole previous page): the Running 1 / Waiting 14 case.
//
// Only the last Read's URLs are kept, so replicas that went away are forgotten.
type stuckTracker struct {
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

func markOf(p *scrape.Page) stuckMark {
	return stuckMark{prompt: p.PromptTokens, generation: p.GenerationTokens,
		promptFam: p.Chosen.PromptTokens, generationFam: p.Chosen.GenerationTokens, processStart: p.ProcessStart}
}

// begin starts a Read: marks not refreshed by it are dropped at end.
func (s *stuckTracker) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = map[string]stuckMark{}
}

// end finishes a Read.
func (s *stuckTracker) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.next = s.next, nil
}

// observe records a successful scrape of url at now and returns the number
// of consecutive suspect scrapes ending with it (0: this one is not
// suspect) and how long the replica has looked stuck.
func (s *stuckTracker) observe(url string, p *scrape.Page, now time.Time) (streak int, stuckFor time.Duration) {
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
	if finiteF(prev.processStart) && finiteF(cur.processStart) && prev.processStart != cur.processStart {
		return false
	}
	compared := 0
	for _, c := range []struct {
		a, b       float64
		famA, famB string
	}{{prev.prompt, cur.prompt, prev.promptFam, cur.promptFam}, {prev.generation, cur.generation, prev.generationFam, cur.generationFam}} {
		if c.famA == "" || c.famA != c.famB || !finiteF(c.a) || !finiteF(c.b) {
			continue
		}
		if c.a != c.b {
			return false
		}
		compared++
	}
	return compared > 0
}

func finiteF(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
