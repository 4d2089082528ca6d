package scrape

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/common/model"
)

// ErrWrongType is wrapped by the error for a family a page declares with a
// # TYPE its value cannot be read as (a held-requests gauge declared a
// counter): the value is unknown, never 0 and never read as if typed
// right.
var ErrWrongType = errors.New("family declared with the wrong type")

// kind is what infscale reads a family as.
type kind int

const (
	gaugeKind     kind = iota // a level: requests running, waiting, held; a fraction
	counterKind               // a monotonic total: tokens, requests, CPU seconds
	histogramKind             // a classic histogram (_bucket, _sum, _count)
)

func (k kind) String() string {
	return [...]string{"gauge", "counter", "histogram"}[k]
}

// accepts reports whether a family declared t can be read as k: its own
// type, or none (undeclared, untyped, unknown: the text format's pages
// without # TYPE). A gauge histogram is a histogram.
func (k kind) accepts(t model.MetricType) bool {
	switch t {
	case "", model.MetricTypeUnknown, "untyped":
		return true
	case model.MetricTypeGauge:
		return k == gaugeKind
	case model.MetricTypeCounter:
		return k == counterKind
	case model.MetricTypeHistogram, model.MetricTypeGaugeHistogram:
		return k == histogramKind
	}
	return false
}

// typeError is a family declared t where infscale reads a k; it is
// ErrWrongType.
type typeError struct {
	family string
	t      model.MetricType
	want   kind
}

func (e *typeError) Error() string {
	return fmt.Sprintf("%s is declared a %s, infscale reads it as a %s: its value is unknown", e.family, e.t, e.want)
}

func (e *typeError) Is(target error) bool { return target == ErrWrongType }

// checkType is nil when name's declared type (raw.typeOf) can be read as
// want, else a *typeError.
func (r *rawPage) checkType(name string, want kind) error {
	t := r.typeOf(name)
	if want == counterKind && t == model.MetricTypeHistogram && strings.HasSuffix(name, "_count") {
		return nil // a classic histogram's _count is a counter of its observations (a gauge histogram's _gcount is not)
	}
	if !want.accepts(t) {
		return &typeError{family: name, t: t, want: want}
	}
	return nil
}
