package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/membudget"
	"github.com/infscale/infscale/internal/yamlbound"
	"github.com/infscale/infscale/pkg/modelserver"
)

// Load reads, decodes strictly and validates the configuration file at path,
// and checks the files its prometheus: client reads (credentials, TLS):
// each a regular file that opens, the TLS ones loading.
// On any problem it returns a nil *File and an Errors listing every problem
// found (unknown keys, wrong types, bad values), each with file:line:col, the
// key and what is allowed. Read errors are returned as they are (not Errors).
//
// Only a regular file (or a symlink to one, as a Kubernetes ConfigMap mount
// is) of at most MaxFileSize bytes is read: a FIFO would block the load
// forever (and SIGTERM with it), /dev/zero would exhaust memory.
func Load(path string) (*File, error) {
	data, err := boundedfile.Read(path, MaxFileSize, "a configuration", "the configuration must be a YAML file")
	if err != nil {
		return nil, err
	}
	return parse(data, path, true)
}

// MaxFileSize is the largest configuration file Load reads: 4 MiB, some
// 14,000 targets of 300 bytes (a flow-style target of the benchmark is
// 136 bytes). Parsing holds the text about six times over (goccy's lexer
// reads it as runes), so the size bounds that part of the parse's memory;
// yamlbound.MaxTokens bounds the rest (docs/evaluation/PERFORMANCE.md).
const MaxFileSize = 4 << 20

// Parse decodes and validates a configuration from data; name is used in
// error positions (usually the file path). Defaults are applied to keys that
// are absent. File paths in the prometheus HTTP client config are read by
// the client as given (relative ones from the working directory); Parse
// does not open them (Load checks them too).
func Parse(data []byte, name string) (*File, error) { return parse(data, name, false) }

// parse is Parse; files also checks the files prometheus:'s client reads
// (validator.clientFiles), as Load does.
func parse(data []byte, name string, files bool) (*File, error) {
	d := newStrictDecoder(name)
	body, errs := d.document(data, nil)
	if errs != nil {
		return nil, errs
	}
	if body == nil {
		return nil, Errors{{File: name, Msg: "empty configuration: at least `targets:` is required"}}
	}
	if e, ok := kubernetesManifest(body, name); ok {
		return nil, Errors{e}
	}
	cfg := &File{Path: name}
	cfg.Prometheus.HTTPClientConfig = promconfig.DefaultHTTPClientConfig
	d.decode(body, reflect.ValueOf(cfg).Elem(), "")
	// A default fills a key left out, not one given as 0 (interval: 0s ran
	// as 15s while the docs say at least 1s; cooldownPeriod: 0 ran as 5m).
	// A zero period, timeout or window is refused at its position; a zero
	// cooldown is KEDA's: none.
	zeros := []struct {
		key, why string
		zero     bool
	}{
		{"pollingInterval", "the decision period, 1s to 1h; leave the key out for the default " + model.Duration(DefaultInterval).String(), cfg.Interval == 0},
		{"prometheus.timeout", "leave the key out for the default " + model.Duration(DefaultTimeout).String(), cfg.Prometheus.Timeout == 0},
	}
	var keepZero []*model.Duration // given as 0 where 0 means something
	for i := range cfg.Targets {
		t := &cfg.Targets[i]
		for j := range t.Metrics {
			zeros = append(zeros, struct {
				key, why string
				zero     bool
			}{fmt.Sprintf("targets[%d].metrics[%d].window", i, j), "at least 1m; leave the key out for the default " + model.Duration(DefaultWindow).String(), t.Metrics[j].Type.Seconds() && t.Metrics[j].Window == 0})
		}
		if key := fmt.Sprintf("targets[%d].zero.cooldownPeriod", i); d.given(key) && t.Zero != nil && t.Zero.Cooldown == 0 {
			keepZero = append(keepZero, &t.Zero.Cooldown)
		}
	}
	for _, z := range zeros {
		if d.given(z.key) && z.zero && !d.failed[z.key] {
			d.errorf(d.pos[z.key], z.key, "must be more than 0 (%s)", z.why)
		}
	}
	cfg.Deprecations = d.deprecations
	applyDefaults(cfg)
	for _, p := range keepZero {
		*p = 0
	}
	for i := range cfg.Targets {
		if !d.named[fmt.Sprintf("targets[%d].server", i)] { // absent, null or ""
			cfg.Targets[i].Server = modelserver.VLLM
		}
	}
	v := &validator{d: d, cfg: cfg, failed: d.failed, files: files}
	d.failed = nil // from here on, errors are the validators' own
	v.validate()
	if errs := d.errors(); errs != nil {
		nameTargets(errs, cfg)
		return nil, errs
	}
	nameTargets(d.warnings, cfg)
	cfg.Warnings = d.warnings
	return cfg, nil
}

// nameTargets sets each problem's Target: the name of the target its key
// is under (targets[i]...), when that target has one.
func nameTargets(errs Errors, cfg *File) {
	for i := range errs {
		if n, ok := targetIndex(errs[i].Key); ok && n >= 0 && n < len(cfg.Targets) {
			errs[i].Target = cfg.Targets[n].Name
		}
	}
}

// newStrictDecoder is a decoder for the file named name (in positions).
func newStrictDecoder(name string) *strictDecoder {
	return &strictDecoder{file: name, pos: map[string]*token.Position{}, failed: map[string]bool{}, named: map[string]bool{}}
}

// document parses data, a YAML file of one document, and returns its
// body: nil for an empty file (comments alone). A byte order mark is
// skipped; a binary file, one beyond yamlbound's bounds or one that does not
// parse is Errors (one, at its position; every key given twice, when that
// is why), and nothing is decoded. A second document is a problem recorded
// on d, the first one still returned. root gives the key path of the
// document's body (nil: ""), which keys given twice are named under.
func (d *strictDecoder) document(data []byte, root func(body ast.Node) string) (ast.Node, Errors) {
	name := d.file
	// A UTF-8 byte order mark (Windows editors write one) is not part of
	// the first key.
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if line, col, ok := notText(data); ok {
		return nil, Errors{{File: name, Line: line, Column: col,
			Msg: "not a YAML text file (a NUL byte or invalid UTF-8 here); the file is UTF-8 YAML"}}
	}
	var be *yamlbound.Error
	toks, err := yamlbound.Tokens(data, membudget.Now())
	if errors.As(err, &be) { // before the parse: its cost grows with the square of the depth
		return nil, Errors{{File: name, Line: be.Line, Column: be.Column, Msg: be.Msg}}
	}
	f, err := parser.Parse(toks, 0)
	if err != nil {
		if errs := d.duplicateKeys(data, root); errs != nil {
			return nil, errs
		}
		var ye yaml.Error
		e := Error{File: name, Msg: err.Error()}
		if errors.As(err, &ye) {
			e.Msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				e.Line, e.Column = tk.Position.Line, tk.Position.Column
			}
		}
		switch {
		case strings.Contains(e.Msg, "'\t'") || strings.Contains(e.Msg, "tab character"):
			e.Msg = strings.ReplaceAll(e.Msg, "\t", `\t`) + " (YAML indents with spaces, not tabs)"
		case e.Msg == "mapping value is not allowed in this context":
			// goccy names the value before the stray ':': on its own
			// line (name: chat: x), or the line above one indented too
			// deep, whose key then reads as that value's continuation.
			e.Msg += " (quote a value that holds ': '; or a line below it is indented deeper than the keys beside it)"
		case e.Msg == "value is not allowed in this context":
			e.Msg += " (indentation: a key lines up with the keys beside it)"
		}
		return nil, Errors{e}
	}
	var body ast.Node
	for i, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			d.errorf(position(doc.Body), "", "only one YAML document is allowed (document %d)", i+1)
			break
		}
		body = doc.Body
	}
	return body, nil
}

// duplicateKeys is document's reading of a file goccy's parser refused:
// when the file parses once keys may repeat, the refusal was a key given
// twice in one mapping (the parser names the first it meets as `mapping key
// "max" already defined at [3:3]`, without its path). It returns every such
// key, at the later one, by its key path and with the first one's position;
// nil when the file does not parse that way either (the parser's error
// stands). A key given twice is refused, never read as the last copy.
func (d *strictDecoder) duplicateKeys(data []byte, root func(body ast.Node) string) Errors {
	toks, err := yamlbound.Tokens(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), membudget.Now())
	if err != nil {
		return nil
	}
	f, err := parser.Parse(toks, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil
	}
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		path := ""
		if root != nil {
			path = root(doc.Body)
		}
		d.twice(doc.Body, path)
		errs := d.errors()
		if names := astTargetNames(doc.Body); path == "" {
			for i := range errs {
				if n, ok := targetIndex(errs[i].Key); ok && n >= 0 && n < len(names) {
					errs[i].Target = names[n]
				}
			}
		}
		return errs // a second document is refused as such once the keys are fixed
	}
	return nil
}

// astTargetNames is each targets[i].name of a configuration's body as
// written (the first copy, "" where there is none), for naming the targets
// of problems found before anything is decoded.
func astTargetNames(body ast.Node) []string {
	var names []string
	each := func(n ast.Node, f func(key string, v ast.Node)) {
		switch m := n.(type) {
		case *ast.MappingValueNode:
			f(keyText(m.Key), m.Value)
		case *ast.MappingNode:
			for _, mv := range m.Values {
				f(keyText(mv.Key), mv.Value)
			}
		}
	}
	each(body, func(key string, v ast.Node) {
		seq, ok := v.(*ast.SequenceNode)
		if key != "targets" || !ok || names != nil {
			return
		}
		names = make([]string, len(seq.Values))
		for i, item := range seq.Values {
			each(item, func(key string, v ast.Node) {
				if s, ok := v.(*ast.StringNode); ok && key == "name" && names[i] == "" {
					names[i] = s.Value
				}
			})
		}
	})
	return names
}

// twice records each key of n's mappings given twice in its mapping, at
// its path under path.
func (d *strictDecoder) twice(n ast.Node, path string) {
	switch v := n.(type) {
	case *ast.AnchorNode:
		d.twice(v.Value, path)
	case *ast.TagNode:
		d.twice(v.Value, path)
	case *ast.MappingValueNode:
		d.twice(v.Value, childPath(path, keyText(v.Key)))
	case *ast.MappingNode:
		first := map[string]*token.Position{}
		for _, mv := range v.Values {
			key := keyText(mv.Key)
			if p, ok := first[key]; ok && p != nil {
				d.errorf(position(mv.Key), childPath(path, key), "key given twice (first at %d:%d); give it once", p.Line, p.Column)
			} else if !ok {
				first[key] = position(mv.Key)
			}
			d.twice(mv.Value, childPath(path, key))
		}
	case *ast.SequenceNode:
		for i, item := range v.Values {
			d.twice(item, fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// keyText is a mapping key as the parser compares keys: its text, unquoted.
func keyText(n ast.Node) string {
	switch v := n.(type) {
	case nil:
		return ""
	case *ast.MappingKeyNode:
		return keyText(v.Value)
	case *ast.TagNode:
		return keyText(v.Value)
	case *ast.AnchorNode:
		return keyText(v.Value)
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

// errors sorts d's problems by position and adds the line for those past
// MaxErrors: the Errors to return, nil when there were none.
func (d *strictDecoder) errors() Errors {
	if len(d.errs) == 0 {
		return nil
	}
	d.errs.sort()
	if d.dropped > 0 {
		d.errs = append(d.errs, Error{File: d.file, Msg: fmt.Sprintf("and %d more problems not listed (the first %d found are above; fix them and run again)", d.dropped, MaxErrors), more: d.dropped})
	}
	return d.errs
}

// notText reports the 1-based line and column (in bytes) of the first NUL
// byte or invalid UTF-8 sequence in data: a binary file, or a text file in
// another encoding, is refused there rather than echoed back as a string.
func notText(data []byte) (line, col int, bad bool) {
	line, start := 1, 0
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == 0 || (r == utf8.RuneError && size <= 1) {
			return line, i - start + 1, true
		}
		if r == '\n' {
			line, start = line+1, i+1
		}
		i += size
	}
	return 0, 0, false
}

// applyDefaults fills keys left absent with the documented defaults.
func applyDefaults(c *File) {
	if c.Interval == 0 {
		c.Interval = model.Duration(DefaultInterval)
	}
	if c.Prometheus.Timeout == 0 {
		c.Prometheus.Timeout = model.Duration(DefaultTimeout)
	}
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	for i := range c.Targets {
		t := &c.Targets[i]
		if t.ScaleTargetRef != nil && t.Namespace == "" {
			t.Namespace = c.Namespace
		}
		if t.InferencePoolRef != nil && t.Scrape.Pods == nil && len(t.Scrape.URLs) == 0 && c.Prometheus.Embedded() {
			t.Scrape.Pods = &PodScrape{}
		}
		sourceDefaults(&t.Scrape, &t.Min, t.Metrics)
		if t.Roles != nil {
			roleDefaults(t.Roles.Prefill)
			roleDefaults(t.Roles.Decode)
			if t.Roles.kube() && t.Namespace == "" {
				t.Namespace = c.Namespace
			}
		}
		if t.Zero != nil && t.Zero.Cooldown == 0 {
			t.Zero.Cooldown = model.Duration(DefaultZeroCooldown)
		}
		for j := range t.Schedule {
			if t.Schedule[j].Timezone == "" {
				t.Schedule[j].Timezone = DefaultScheduleTZ
			}
		}
	}
}

// metricDefaults fills the quantile and window of ttft and queuewait
// metrics left out.
// sourceDefaults fills what a target or a P/D role reads its signals
// with: the pods' scrape path, minReplicaCount, each metric's defaults.
func sourceDefaults(sc *Scrape, min **int, ms []Metric) {
	if sc.Pods != nil && sc.Pods.Path == "" {
		sc.Pods.Path = DefaultScrapePath
	}
	if *min == nil {
		m := DefaultMin
		*min = &m
	}
	metricDefaults(ms)
}

func metricDefaults(ms []Metric) {
	for j := range ms {
		m := &ms[j]
		if m.Type.Seconds() && m.Quantile == 0 {
			m.Quantile = DefaultQuantile
		}
		if m.Type.Seconds() && m.Window == 0 {
			m.Window = model.Duration(DefaultWindow)
		}
	}
}

// IntervalDuration is Interval as a time.Duration.
func (c *File) IntervalDuration() time.Duration { return time.Duration(c.Interval) }

func (es Errors) sort() {
	// Stable by position so messages read top to bottom; errors without a
	// position keep their order at the end. (An insertion sort was
	// quadratic when the validators' problems follow the decoder's.)
	sort.SliceStable(es, func(i, j int) bool { return less(es[i], es[j]) })
}

func less(a, b Error) bool {
	if a.Line == 0 || b.Line == 0 {
		return a.Line != 0 && b.Line == 0
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Column < b.Column
}

// kubernetesManifest reports a body with top-level apiVersion and kind: a
// Kubernetes object (deploy/'s ConfigMaps and their patches), whose
// configuration is the text under a data key, not the object. One error at
// kind replaces a list of unknown keys that would not say so.
func kubernetesManifest(body ast.Node, name string) (Error, bool) {
	mn, ok := body.(ast.MapNode)
	if !ok {
		return Error{}, false
	}
	var kind ast.Node
	var apiVersion bool
	var dataKeys []string
	for it := mn.MapRange(); it.Next(); {
		switch strings.TrimSpace(it.Key().String()) {
		case "apiVersion":
			apiVersion = true
		case "kind":
			kind = it.Value()
		case "data":
			if dm, ok := it.Value().(ast.MapNode); ok {
				for dt := dm.MapRange(); dt.Next(); {
					dataKeys = append(dataKeys, strings.TrimSpace(dt.Key().String()))
				}
			}
		}
	}
	if !apiVersion || kind == nil {
		return Error{}, false
	}
	e := Error{File: name, Msg: fmt.Sprintf("a Kubernetes object (kind: %s), not an infscale configuration: ", strings.TrimSpace(kind.String()))}
	if p := position(kind); p != nil {
		e.Line, e.Column = p.Line, p.Column
	}
	if len(dataKeys) == 0 {
		e.Msg += "give the configuration file itself (the text a ConfigMap holds under a data key; docs/config.md)"
	} else {
		e.Msg += fmt.Sprintf("give the text it holds under data.%s, saved to a file (docs/config.md)", dataKeys[0])
	}
	return e, true
}
