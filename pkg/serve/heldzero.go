package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
)

// carryHeldZero reads held 0 for a pool idle at zero whose flow-control
// queue series are gone, and returns the decision record's warning saying
// so ("" when it does not apply). A pool reaches zero only through
// idle-to-zero, which needs held known 0 (in Prometheus mode a queue
// series within the lookback: the family is scraped); llm-d's router
// deletes an idle flow's queue series, so a pool idle at zero for longer
// than the lookback reads held unknown (promql.ErrFlowQueueGone) and,
// held being the only signal at zero, no decision was valid: the
// decisions-stale alert paged for a pool doing what it should. While it
// stays at zero, the saturation without a queue series within the lookback
// means no request since (any request writes its flow's series for 5 to 10
// minutes), or a relabel drop of the queue family added while at zero: the
// trade-off (that pool never woke before either, but the alert said so).
//
// It applies when rd reads current 0 (read), held's only error wraps
// promql.ErrFlowQueueGone (the saturation is there: not a Prometheus
// failure, flow control off, or an EPP not scraped), and t's stay at zero
// began with a decision that read held known 0 (State.HeldZeroAt, kept by
// the Decider and persisted with --state-dir; a rebuild from Prometheus
// sets it when the last desired exported was 0, Rebuilder.Rebuild). Then
// held is 0 and its error is dropped: neither counted nor logged. Without
// HeldZeroAt (serve started on a pool at zero already past the lookback
// with no state, none rebuilt, or a last desired above 0) the error stays.
func carryHeldZero(t *target, rd *Reading) string {
	since := t.run.State.HeldZeroAt
	if since.IsZero() || !rd.CurrentKnown || rd.Obs.Current != 0 || !math.IsNaN(rd.Obs.Held) {
		return ""
	}
	i := slices.IndexFunc(rd.Errors, func(e ReadError) bool { return e.Signal == promql.Held.String() })
	if i < 0 || !errors.Is(rd.Errors[i].Err, promql.ErrFlowQueueGone) {
		return ""
	}
	rd.Obs.Held = 0
	rd.Errors = slices.Delete(slices.Clone(rd.Errors), i, i+1)
	if len(rd.Errors) == 0 {
		rd.Errors = nil
	}
	return fmt.Sprintf("held 0: no flow-control queue series within %s; carried from the known 0 at zero at %s",
		model.Duration(flowQueueLookback(&t.cfg)), since.UTC().Format(time.RFC3339))
}

// flowQueueLookback is how far back the held query of a target reading
// the flow-control queue (zero.flow_control) looks for a queue series:
// promql.FlowQueueLookbackFor its cooldownPeriod.
func flowQueueLookback(t *config.Target) time.Duration {
	return promql.FlowQueueLookbackFor(time.Duration(t.Zero.Cooldown))
}

// heldReader identifies how target t reads its held count from the
// source of promURL (its prometheus.url; "" embedded mode): the server,
// selector, pages and pool, the zero keys but the cooldown, and the
// source, as 16 hex digits of a SHA-256 (the state file keeps it, not the
// selector or the URL). carryHeldZero's proof, a known 0 at zero read by
// the flow-control query (the queue family scraped), is of one reader: a 0
// read by a zero.held query (`... or vector(0)` reads 0 whatever is
// scraped), a page in embedded mode, or another pool's selector proves
// nothing of the next one's. So a target whose reader changes drops
// State.HeldZeroAt, at a reload (Loop.install) and at a restart from a
// state file saved under another reader (Loop.restore, Persisted's
// HeldReader), and the next known 0 at zero sets it again.
func heldReader(t *config.Target, promURL string) string {
	z := config.Zero{}
	if t.Zero != nil {
		z = *t.Zero
	}
	z.Cooldown = 0
	b, err := json.Marshal(struct {
		Server, Selector string
		Scrape           config.Scrape
		Pool             *config.PoolRef
		Zero             config.Zero
		Prometheus       string
	}{t.Server.String(), t.Selector, t.Scrape, t.InferencePoolRef, z, promURL})
	if err != nil { // not for these types; never equal to another's
		return "unknown: " + err.Error()
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
