package serve

import (
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protodelim"
)

// metricsHandler serves /metrics as promhttp.HandlerFor(reg, {EnableOpenMetrics})
// does (the formats of expfmt.DefaultOpenMetricsAcceptedFormats negotiated
// from Accept, gzip or identity from Accept-Encoding, name[] filters,
// promhttp_metric_handler_errors_total by cause, an HTTP 500 when reg's
// Gather fails), with the table's families written one at a time between
// reg's in name order (seriesTable.writeFamilies): a scrape holds one
// family's protobuf objects, not every series', and nothing is hashed or
// sorted per series. gzip is written at gzip.BestSpeed (promhttp's
// default level took about three times the CPU for 10% less).
func metricsHandler(reg *prometheus.Registry, table *seriesTable) http.Handler {
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhttp_metric_handler_errors_total",
		Help: "Total number of internal errors encountered by the promhttp metric handler.",
	}, []string{"cause"})
	errs.WithLabelValues("gathering")
	errs.WithLabelValues("encoding")
	if err := reg.Register(errs); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			errs = are.ExistingCollector.(*prometheus.CounterVec)
		} else {
			panic(err)
		}
	}
	accepted := expfmt.DefaultOpenMetricsAcceptedFormats()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mfs, err := reg.Gather()
		if err != nil {
			errs.WithLabelValues("gathering").Inc()
			http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
			return
		}
		format := expfmt.NegotiateAccept(r.Header, accepted...)
		h := w.Header()
		h.Add("Vary", "Accept")
		h.Add("Vary", "Accept-Encoding")
		h.Set("Content-Type", string(format))
		var out io.Writer = w
		if acceptsGzip(r.Header.Values("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			gz := gzipPool.Get().(*gzip.Writer)
			gz.Reset(w)
			defer func() { _ = gz.Close(); gzipPool.Put(gz) }()
			out = gz
		}
		var only map[string]bool
		if r.URL != nil {
			if names := r.URL.Query()["name[]"]; len(names) > 0 {
				only = map[string]bool{}
				for _, n := range names {
					only[n] = true
				}
			}
		}
		enc := expfmt.NewEncoder(out, format)
		encode := func(mf *dto.MetricFamily, table bool) error {
			if only != nil && !only[mf.GetName()] {
				return nil
			}
			var err error
			switch {
			case !table:
				err = enc.Encode(mf)
			// The table's names are legacy-valid (TestTableNamesNeedNoEscaping),
			// so the Encoder's escaping, a copy of the family's series
			// list, would change nothing.
			case format.FormatType() == expfmt.TypeOpenMetrics:
				_, err = expfmt.MetricFamilyToOpenMetrics(out, mf)
			case format.FormatType() == expfmt.TypeTextPlain:
				_, err = expfmt.MetricFamilyToText(out, mf)
			case format.FormatType() == expfmt.TypeProtoDelim:
				_, err = protodelim.MarshalTo(out, mf)
			default:
				err = enc.Encode(mf)
			}
			if err != nil {
				errs.WithLabelValues("encoding").Inc()
			}
			return err
		}
		// reg's families (sorted by name) go before the first table family
		// that sorts after them.
		next := 0
		err = table.writeFamilies(func(mf *dto.MetricFamily) error {
			for ; next < len(mfs) && mfs[next].GetName() < mf.GetName(); next++ {
				if err := encode(mfs[next], false); err != nil {
					return err
				}
			}
			return encode(mf, true)
		}, true)
		for ; err == nil && next < len(mfs); next++ {
			err = encode(mfs[next], false)
		}
		if err != nil {
			return // the client went away or the writer failed: nothing more can be sent
		}
		if c, ok := enc.(expfmt.Closer); ok {
			if err := c.Close(); err != nil { // OpenMetrics' "# EOF"
				errs.WithLabelValues("encoding").Inc()
			}
		}
	})
}

var gzipPool = sync.Pool{New: func() any {
	gz, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return gz
}}

// acceptsGzip reports whether an Accept-Encoding header (RFC 9110 12.5.3)
// prefers gzip to identity: gzip's q-value (its own entry, else "*"'s)
// above identity's (the same) and above 0; with neither listed, or a tie,
// identity, as promhttp. Codings and "q" are case-insensitive, and a
// coding's own entry overrides "*" (promhttp takes lower case only, and
// the highest of the two).
func acceptsGzip(values []string) bool {
	q := map[string]float64{}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			fields := strings.Split(part, ";")
			coding := strings.ToLower(strings.TrimSpace(fields[0]))
			weight := 1.0
			for _, p := range fields[1:] {
				if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
					if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
						weight = f
					}
				}
			}
			if coding != "" {
				q[coding] = max(q[coding], weight)
			}
		}
	}
	of := func(coding string) float64 {
		if w, ok := q[coding]; ok {
			return w
		}
		if w, ok := q["*"]; ok {
			return w
		}
		return -1
	}
	return of("gzip") > of("identity") && of("gzip") > 0
}
