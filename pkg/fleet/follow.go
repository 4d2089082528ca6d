package fleet

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// DesiredFunc returns the desired replica count to follow; ok false means
// "no value yet" (keep the current count).
type DesiredFunc func(ctx context.Context) (n int, ok bool, err error)

// Follow polls desired every `every` and scales the fleet to it, as KEDA's
// prometheus trigger would, until ctx is done. Errors keep the current
// count (KEDA's fallback would too) and are passed to onError (may be nil).
// every must be > 0 (time.NewTicker panics otherwise).
func (f *Fleet) Follow(ctx context.Context, every time.Duration, desired DesiredFunc, onError func(error)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		n, ok, err := desired(ctx)
		switch {
		case err != nil:
			if onError != nil {
				onError(err)
			}
		case ok && n != f.Desired():
			f.SetDesired(n)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// DesiredFromURL reads infscale_desired_replicas{target="<target>"} from a
// /metrics URL (infscale serve's). ok is false when the series is absent.
func DesiredFromURL(client *http.Client, url, target string) DesiredFunc {
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	return func(ctx context.Context) (int, bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, false, err
		}
		req.Header.Set("Accept", "text/plain;version=0.0.4")
		resp, err := client.Do(req)
		if err != nil {
			return 0, false, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, false, fmt.Errorf("%s: %s", url, resp.Status)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		if err != nil {
			return 0, false, fmt.Errorf("%s: %w", url, err)
		}
		fam, ok := fams["infscale_desired_replicas"]
		if !ok {
			return 0, false, nil
		}
		// A gauge, or a page without # TYPE; any other type is not read
		// (its gauge value would read 0: a fleet scaled to nothing).
		if ty := fam.GetType(); ty != dto.MetricType_GAUGE && ty != dto.MetricType_UNTYPED {
			return 0, false, fmt.Errorf("%s: infscale_desired_replicas is declared a %s, not a gauge: not read", url, strings.ToLower(ty.String()))
		}
		var (
			found int
			v     = math.Inf(-1)
			roles []string
		)
		for _, m := range fam.GetMetric() {
			mine, role := false, ""
			for _, l := range m.GetLabel() {
				switch {
				case l.GetName() == "target" && l.GetValue() == target:
					mine = true
				case l.GetName() == "role":
					role = l.GetValue()
				}
			}
			if !mine {
				continue
			}
			found++
			if role != "" {
				roles = append(roles, fmt.Sprintf("role=%q", role))
			}
			x := m.GetGauge().GetValue()
			if m.GetGauge() == nil {
				x = m.GetUntyped().GetValue()
			}
			// Series differing in other labels: the largest, as KEDA's
			// max(infscale_desired_replicas{target=...}) reads them; NaN
			// wins, to be refused below.
			if math.IsNaN(x) || !math.IsNaN(v) && x > v {
				v = x
			}
		}
		switch {
		case found == 0:
			return 0, false, nil
		case len(roles) > 0:
			// A prefill/decode target has a series per pool: following
			// one (the first, or the only one on the page) silently
			// followed one pool of the pair.
			return 0, false, fmt.Errorf("%s: %d series of infscale_desired_replicas{target=%q} (%s): a prefill/decode pair's pools; the fleet is one pool: follow a target without roles", url, found, target, strings.Join(roles, ", "))
		case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
			return 0, false, fmt.Errorf("%s: desired %v", url, v)
		}
		// A count past any fleet (1e19 overflowed int to a negative, which
		// scaled the fleet to zero) is a count that large: SetDesired caps it.
		return int(math.Round(min(v, math.MaxInt32))), true, nil
	}
}
