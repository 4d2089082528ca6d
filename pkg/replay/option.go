package replay

import "github.com/infscale/infscale/pkg/recommend"

// SetOption applies one policy-string option (OPTION=VALUE of
// PolicySyntax, e.g. "downwindow", "364") to p, as ParsePolicy does, so a
// caller that builds a recommend.Policy directly (pkg/tune's search
// space) reads each option the one way. p is not validated (FromRecommend
// does). Errors: an unknown option, or a value the option does not take.
func SetOption(p *recommend.Policy, k, v string) error { return setOption(p, k, v) }
