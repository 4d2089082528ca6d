package config

import (
	"fmt"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/infscale/infscale/internal/sourcekey"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
)

// Roles are a P/D target's two pools (llm-d's pod label llm-d.ai/role:
// prefill, decode; docs/llm-d.md). Both are required.
type Roles struct {
	Prefill *RoleSource `yaml:"prefill"`
	Decode  *RoleSource `yaml:"decode"`
}

// RoleSource is what one pool of a P/D target has of its own: where its
// signals are read, its workload, its metrics and bounds. Each key means
// what the target's key of the same name means (Target); the target's
// other keys (server, replica, behavior, guard, lookahead, ramp_bound,
// hold, apply, namespace) are shared by both pools.
type RoleSource struct {
	Selector       string                                     `yaml:"selector"`
	Replicas       string                                     `yaml:"replicas"`
	ScaleTargetRef *autoscalingv2.CrossVersionObjectReference `yaml:"scaleTargetRef"`
	Scrape         Scrape                                     `yaml:"scrape"`
	Metrics        []Metric                                   `yaml:"metrics"`
	Min            *int                                       `yaml:"minReplicaCount"`
	Max            *int                                       `yaml:"maxReplicaCount"`
}

// roleKeys are RoleSource's keys; a P/D target's own keys of these names
// are refused (they go under each role).
var roleKeys = []string{"selector", "replicas", "scaleTargetRef", "scrape", "metrics", "minReplicaCount", "maxReplicaCount"}

// pairRefused are the target keys a P/D target does not take, with why.
var pairRefused = map[string]string{
	"zero":              "scale to zero is for one pool: a P/D target's pools run at least minReplicaCount each",
	"schedule":          "schedules are for one pool: give each role's minReplicaCount instead",
	"tune":              "serve's self-tuning re-tunes one pool; a P/D target is tuned by `infscale tune --config FILE --target NAME` on its history or `tune --trace T --pd` (docs/llm-d.md)",
	"pod_deletion_cost": "is not available for P/D targets",
	"inferencePoolRef":  "a P/D target's pools are read from each role's own pods, and llm-d's InferencePool holds both roles' pods: give each role its scaleTargetRef and scrape: {port: 8000} (its Deployment's Ready pods), or its scrape: URLs",
}

func (r *Roles) kube() bool {
	return r != nil && ((r.Prefill != nil && r.Prefill.ScaleTargetRef != nil) || (r.Decode != nil && r.Decode.ScaleTargetRef != nil))
}

// Pair reports whether t is a P/D target (has roles:).
func (t *Target) Pair() bool { return t.Roles != nil }

// RoleTarget is the one-pool Target of role r of P/D target t: t's shared
// keys with the role's own (RoleSource) in place, Role set, and the
// role's capacity (Capacity.ForRole) in its Policy. ok false when t has
// no such role.
func (t *Target) RoleTarget(r recommend.Role) (Target, bool) {
	if t.Roles == nil {
		return Target{}, false
	}
	src := t.Roles.Prefill
	if r == recommend.RoleDecode {
		src = t.Roles.Decode
	}
	if src == nil {
		return Target{}, false
	}
	rt := *t
	rt.Roles, rt.Role = nil, r
	rt.Zero, rt.Schedule, rt.Tune, rt.PodDeletionCost, rt.InferencePoolRef = nil, nil, nil, false, nil // refused on a pair (pairRefused)
	rt.Selector, rt.Replicas, rt.ScaleTargetRef, rt.Scrape = src.Selector, src.Replicas, src.ScaleTargetRef, src.Scrape
	rt.Metrics, rt.Min, rt.Max = src.Metrics, src.Min, src.Max
	if rt.ScaleTargetRef == nil {
		rt.Namespace = "" // only with a workload
	}
	return rt, true
}

// Roles are the two roles of a pair in the order serve decides them.
var pairRoles = [2]recommend.Role{recommend.RolePrefill, recommend.RoleDecode}

// roleDefaults fills a role's absent keys as applyDefaults fills a
// target's.
func roleDefaults(src *RoleSource) {
	if src == nil {
		return
	}
	sourceDefaults(&src.Scrape, &src.Min, src.Metrics)
}

// pair validates P/D target t at key p: its refused keys, both roles
// present, and each role as the one-pool target RoleTarget makes, whose
// shared keys are reported at the target's own key (once).
func (v *validator) pair(p string, t *Target) {
	for _, k := range roleKeys {
		if v.present(p + "." + k) {
			v.at(p+"."+k, "a P/D target (roles:) has %s per role: move it under roles.prefill and roles.decode", k)
		}
	}
	for k, why := range pairRefused {
		if v.present(p + "." + k) {
			v.at(p+"."+k, "%s", why)
		}
	}
	for _, r := range pairRoles {
		rp := p + ".roles." + r.String()
		rt, ok := t.RoleTarget(r)
		if !ok {
			if !v.bad(rp) {
				v.at(rp, "required: a P/D target names both pools, roles: {prefill: {...}, decode: {...}} (each with its scrape: or selector:, metrics and maxReplicaCount)")
			}
			continue
		}
		v.rolePrefix, v.parentPrefix = rp+".", p+"."
		v.target(rp, &rt)
		v.rolePrefix, v.parentPrefix = "", ""
	}
	// The EPP's page and series describe its whole InferencePool, and
	// llm-d's P/D pool holds both roles' pods (llm-d.ai/role tells them
	// apart): each pool would be decided on the whole pair's signals.
	if t.Server == modelserver.EPP {
		v.at(p+".server", "server: epp reads the Endpoint Picker, whose page describes its whole InferencePool: both roles' pods at once, not one pool's; read each role from its own model-server pods (server: vllm, each role's scrape: or selector:)")
	}
	// A page in both pools: each would be decided on the other's pods too.
	// URLs compare as within one list (sourcekey.Duplicates: after RFC 3986
	// normalisation, http://P0:8000/./metrics and http://p0:8000/metrics
	// are one page).
	if r := t.Roles; r.Prefill != nil && r.Decode != nil {
		pre := r.Prefill.Scrape.URLs
		dups := sourcekey.Duplicates(append(slices.Clip(pre), r.Decode.Scrape.URLs...))
		for i, u := range r.Decode.Scrape.URLs {
			j := dups[len(pre)+i]
			switch {
			case j < 0 || j >= len(pre): // none, or a duplicate within decode's own list (said there)
			case pre[j] == u:
				v.at(fmt.Sprintf("%s.roles.decode.scrape[%d]", p, i), "%s is in roles.prefill.scrape too: each pool's URLs must be its own pods' pages (llm-d's <name>-prefill and <name>-decode pods)", sourcekey.Redact(u))
			default:
				v.at(fmt.Sprintf("%s.roles.decode.scrape[%d]", p, i), "%s is the same page as roles.prefill.scrape[%d] %s (both %s once normalised as RFC 3986 section 6 does): each pool's URLs must be its own pods' pages (llm-d's <name>-prefill and <name>-decode pods)",
					sourcekey.Redact(u), j, sourcekey.Redact(pre[j]), sourcekey.Redact(sourcekey.Of(u)))
			}
		}
	}
	// Both pools on one workload: each would be decided on, and scale,
	// the same pods.
	if r := t.Roles; r.Prefill != nil && r.Decode != nil && r.Prefill.ScaleTargetRef != nil && r.Decode.ScaleTargetRef != nil {
		a, b := r.Prefill.ScaleTargetRef, r.Decode.ScaleTargetRef
		ga, _ := schema.ParseGroupVersion(a.APIVersion)
		gb, _ := schema.ParseGroupVersion(b.APIVersion)
		if a.Name != "" && ga.Group == gb.Group && a.Kind == b.Kind && a.Name == b.Name {
			v.at(p+".roles.decode.scaleTargetRef", "names the same workload as roles.prefill.scaleTargetRef (%s %s): each pool is its own workload, scaled and read on its own (llm-d's <name>-prefill and <name>-decode Deployments)", b.Kind, b.Name)
		}
	}
	// Both pools on one series set: each would be decided on the whole
	// pair's signals.
	if r := t.Roles; r.Prefill != nil && r.Decode != nil && r.Prefill.Selector != "" && r.Decode.Selector != "" {
		a, errA := promql.ParseSelector(r.Prefill.Selector)
		b, errB := promql.ParseSelector(r.Decode.Selector)
		switch {
		case errA != nil || errB != nil:
		case slices.Equal(promql.MatcherSet(a), promql.MatcherSet(b)):
			v.at(p+".roles.decode.selector", "selects the same series as roles.prefill.selector (%s): each pool's selector must match its own pods only (e.g. llm_d_ai_role=\"prefill\" and llm_d_ai_role=\"decode\", or pod=~\"chat-prefill-.*\" and pod=~\"chat-decode-.*\")", r.Prefill.Selector)
		case promql.Covers(a, b): // every series decode's selects, prefill's selects too
			v.at(p+".roles.prefill.selector", "selects every series that roles.decode.selector (%s) selects: the prefill pool would count the decode pods too; add a matcher only the prefill pods carry (llm_d_ai_role=\"prefill\", or pod=~\"chat-prefill-.*\")", r.Decode.Selector)
		case promql.Covers(b, a):
			v.at(p+".roles.decode.selector", "selects every series that roles.prefill.selector (%s) selects: the decode pool would count the prefill pods too; add a matcher only the decode pods carry (llm_d_ai_role=\"decode\", or pod=~\"chat-decode-.*\")", r.Prefill.Selector)
		}
	}
}

// key maps a key of a role being validated (v.rolePrefix) that is not the
// role's own to the target's key of that name.
func (v *validator) key(k string) string {
	if v.rolePrefix == "" || !strings.HasPrefix(k, v.rolePrefix) {
		return k
	}
	rest := k[len(v.rolePrefix):]
	head := rest
	if i := strings.IndexAny(rest, ".["); i >= 0 {
		head = rest[:i]
	}
	for _, own := range roleKeys {
		if head == own {
			return k
		}
	}
	return v.parentPrefix + rest
}

// reportedOnce reports whether key's message was reported before (both
// roles share the target's keys); it notes it when not.
func (v *validator) reportedOnce(key, msg string) bool {
	if v.reported == nil {
		v.reported = map[string]bool{}
	}
	k := key + "\x00" + msg
	if v.reported[k] {
		return true
	}
	v.reported[k] = true
	return false
}

// Key names t among a config's targets and their pools: its name, or a
// pool's name@role (RoleTarget's; a name has no '@').
func (t *Target) Key() string {
	if t.Role == 0 {
		return t.Name
	}
	return t.Name + "@" + t.Role.String()
}
