package config

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/sigv4"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/recommend"
)

// strictDecoder walks a YAML AST alongside a Go value and decodes every key it
// can, collecting every problem (unknown key, wrong type, bad scalar) with its
// position instead of stopping at the first, as Prometheus's rulefmt does.
// Leaves (types with their own unmarshaler, scalars, maps) are decoded by
// goccy/go-yaml in strict mode.
type strictDecoder struct {
	file string
	errs Errors
	// pos maps a key path (targets[0].metrics[1].type) to the position of
	// its value, for the validators that run after decoding.
	pos map[string]*token.Position
	// failed holds the key paths whose value could not be decoded; the
	// validators stay quiet about them (one message per mistake).
	failed map[string]bool
	// named holds the key paths given a non-empty name (a signal, a
	// server): an absent, null or empty one takes the default.
	named map[string]bool
	// null holds the key paths given a null value (key: alone), which
	// read as absent.
	null map[string]bool
	// dropped counts the problems past MaxErrors.
	dropped int
	// spelled maps the key path of a key written under its old name
	// (renamedKeys) to the path as written, so that a problem with its
	// value names the key the user wrote.
	spelled map[string]string
	// deprecations are the keys written under their old names.
	deprecations []Error
	// warnings are the validators' File.Warnings.
	warnings []Error
}

// renamedKeys are the keys renamed to the HPA's and KEDA's names, by the
// struct that holds them: old name -> new name. The old name is read for
// one release with a deprecation warning (File.Deprecations) naming the
// new one; docs/config.md's "Renamed keys" table lists the same pairs
// (TestRenamedKeysDocumented).
var renamedKeys = map[reflect.Type]map[string]string{
	reflect.TypeFor[File]():   {"interval": "pollingInterval"},
	reflect.TypeFor[Target](): {"min": "minReplicaCount", "max": "maxReplicaCount"},
	reflect.TypeFor[Zero]():   {"cooldown": "cooldownPeriod"},
	reflect.TypeFor[Window](): {"min": "desiredReplicas"},
}

// keyHints says, for an unknown key a reader of another tool's docs
// writes, what infscale does instead (after the list of allowed keys).
var keyHints = map[reflect.Type]map[string]string{
	reflect.TypeFor[Zero](): {"activationThreshold": "infscale has no activation threshold: any held request activates one replica (KEDA's activationThreshold belongs in the ScaledObject's trigger, \"0\" there, docs/keda.md)"},
	// The file's own keys, written inside a target (indented under it):
	// one decision period and one Prometheus serve every target.
	reflect.TypeFor[Target](): {
		"pollingInterval": topLevelHint, "interval": topLevelHint, "listen": topLevelHint, "prometheus": topLevelHint,
	},
}

// topLevelHint is keyHints' word for a file's key written in a target.
const topLevelHint = "it is a key of the file (at the top level, beside targets:), one for every target: move it out of the target"

var (
	bytesUnmarshaler     = reflect.TypeFor[yaml.BytesUnmarshaler]()
	interfaceUnmarshaler = reflect.TypeFor[yaml.InterfaceUnmarshaler]()
	jsonUnmarshaler      = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler      = reflect.TypeFor[encoding.TextUnmarshaler]()
	// walkedTypes have an unmarshaler but are walked key by key so that
	// every unknown key inside them is reported with its position.
	walkedTypes = map[reflect.Type]bool{
		reflect.TypeFor[promconfig.HTTPClientConfig](): true,
		reflect.TypeFor[Prometheus]():                  true, // embeds HTTPClientConfig, inheriting its UnmarshalYAML
		reflect.TypeFor[sigv4.SigV4Config]():           true, // its UnmarshalYAML validates; Validate runs in validate.go, at the key
	}
)

// MaxErrors is the most problems Parse lists: a file with more (900
// unknown keys, a list of 500,000 items where targets go) lists the first
// MaxErrors found and one line saying how many more there were (Errors.Total
// counts them all), so that its message fits a screen and refusing it
// costs no more than reading it. The deprecation warnings are bounded the
// same way.
const MaxErrors = 20

func (d *strictDecoder) errorf(pos *token.Position, key, format string, args ...any) {
	if d.failed != nil {
		d.failed[key] = true
	}
	if len(d.errs) >= MaxErrors {
		d.dropped++
		return
	}
	shown := key
	if w, ok := d.spelled[key]; ok {
		shown = w
	}
	e := Error{File: d.file, Key: shown, Msg: fmt.Sprintf(format, args...)}
	if d.null[key] {
		// A null reads as the key left out: a message about the value
		// read (0, "") would name a value the file does not hold.
		e.Msg = "written with no value (null: `" + lastKey(shown) + ": ~` or nothing after the colon reads as left out): " + e.Msg
	}
	if pos != nil {
		e.Line, e.Column = pos.Line, pos.Column
	}
	d.errs = append(d.errs, e)
}

// given reports whether the key at path was written with a value (not
// left out, not null).
func (d *strictDecoder) given(path string) bool {
	_, ok := d.pos[path]
	return ok && !d.null[path]
}

func position(n ast.Node) *token.Position {
	if n == nil || n.GetToken() == nil {
		return nil
	}
	return n.GetToken().Position
}

// field is a struct field reachable under a YAML key (through inline structs).
type field struct {
	index []int
	typ   reflect.Type
}

// fieldsOf lists the YAML keys of struct type t, flattening `,inline` fields;
// the key is the yaml tag, else the json tag, else the lowercased Go name
// (goccy/go-yaml's rule). The map is shared: read-only.
func fieldsOf(t reflect.Type) map[string]field {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]field)
	}
	f := listFields(t)
	fieldCache.Store(t, f)
	return f
}

// fieldCache holds fieldsOf by reflect.Type: a mapping is decoded once per
// target and list item (10,000 targets listed their fields 60,000 times).
var fieldCache sync.Map

func listFields(t reflect.Type) map[string]field {
	out := map[string]field{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" {
			tag = f.Tag.Get("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			for k, sub := range listFields(f.Type) {
				out[k] = field{index: append([]int{i}, sub.index...), typ: sub.typ}
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = field{index: []int{i}, typ: f.Type}
	}
	return out
}

func isLeaf(t reflect.Type) bool {
	if walkedTypes[t] {
		return false
	}
	pt := reflect.PointerTo(t)
	for _, u := range []reflect.Type{bytesUnmarshaler, interfaceUnmarshaler, jsonUnmarshaler, textUnmarshaler} {
		if pt.Implements(u) {
			return true
		}
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Slice, reflect.Pointer:
		return false
	}
	return true
}

func childPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// unwrap removes anchors and tags; aliases are refused (rare in configs and
// their errors would point at the anchor).
func (d *strictDecoder) unwrap(n ast.Node, path string) (ast.Node, bool) {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			d.errorf(position(n), path, "YAML tags (%s) are not read: write the value plainly (quote a string: \"5\")", v.Start.Value)
			return nil, false
		case *ast.AliasNode:
			d.errorf(position(n), path, "aliases (*name) are not supported; repeat the value")
			return nil, false
		default:
			return n, true
		}
	}
}

// decode fills v (addressable) from n, recording problems under path.
func (d *strictDecoder) decode(n ast.Node, v reflect.Value, path string) {
	n, ok := d.unwrap(n, path)
	if !ok || n == nil {
		return
	}
	if path != "" {
		d.pos[path] = position(n)
	}
	if n.Type() == ast.NullType {
		if d.null == nil {
			d.null = map[string]bool{}
		}
		d.null[path] = true
		return // absent value: keep the zero value / default
	}
	t := v.Type()
	switch {
	case t == reflect.TypeFor[Scrape]():
		d.scrape(n, v.Addr().Interface().(*Scrape), path)
	case isLeaf(t):
		d.leaf(n, v, path)
	case t.Kind() == reflect.Pointer:
		nv := reflect.New(t.Elem())
		if !v.IsNil() {
			nv.Elem().Set(v.Elem())
		}
		d.decode(n, nv.Elem(), path)
		v.Set(nv)
	case t.Kind() == reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			d.errorf(position(n), path, "expected a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(t, len(seq.Values), len(seq.Values))
		for i, item := range seq.Values {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case t.Kind() == reflect.Struct:
		d.mapping(n, v, path)
	default:
		d.leaf(n, v, path)
	}
}

// scrape decodes `scrape:`, a list of URLs or a mapping {port, path}.
func (d *strictDecoder) scrape(n ast.Node, s *Scrape, path string) {
	switch n.(type) {
	case *ast.SequenceNode:
		d.decode(n, reflect.ValueOf(&s.URLs).Elem(), path)
	case ast.MapNode:
		d.decode(n, reflect.ValueOf(&s.Pods).Elem(), path)
	default:
		d.errorf(position(n), path, "expected a list of /metrics URLs, or with scaleTargetRef a mapping {port: 8000, path: /metrics}; got %s", describe(n))
	}
}

func (d *strictDecoder) mapping(n ast.Node, v reflect.Value, path string) {
	fields := fieldsOf(v.Type())
	mn, ok := n.(ast.MapNode)
	if !ok {
		d.errorf(position(n), path, "expected a mapping with keys %s, got %s", keyList(fields), describe(n))
		return
	}
	seen := map[string]string{} // key -> as written
	// misspelled are the keys an unknown key most likely meant: one not
	// given as well is marked failed after the loop, so that the
	// validator's checks of it (a required key's "0 must be > 0", "is
	// required") do not add an error about a key the file never gave
	// beside the one that names the misspelling.
	var misspelled []string
	defer func() {
		for _, k := range misspelled {
			if _, given := seen[k]; !given && d.failed != nil {
				d.failed[childPath(path, k)] = true
			}
		}
	}()
	renamed := renamedKeys[v.Type()]
	it := mn.MapRange()
	for it.Next() {
		kn := it.Key()
		var key string
		if sn, ok := kn.(*ast.StringNode); ok {
			key = sn.Value // unquoted by goccy: 'max' and "max" are max
		} else {
			key = strings.TrimSpace(kn.String())
		}
		kp := childPath(path, key)
		written := key
		if nk, ok := renamed[key]; ok {
			key = nk
			kp = childPath(path, nk)
		}
		f, known := fields[key]
		if _, merge := kn.(*ast.MergeKeyNode); merge && !known {
			d.errorf(position(kn), kp, "YAML merge keys (<<: *name) are not read, as aliases are not: repeat the keys")
			continue
		}
		if !known {
			if h, ok := keyHints[v.Type()][key]; ok {
				d.errorf(position(kn), kp, "unknown key; allowed here: %s; %s", keyList(fields), h)
			} else {
				meant, hint := didYouMean(key, fields)
				d.errorf(position(kn), kp, "unknown key; allowed here: %s%s", keyList(fields), hint)
				if meant != "" {
					misspelled = append(misspelled, meant)
				}
			}
			continue
		}
		if was, ok := seen[key]; ok {
			if was == written {
				d.errorf(position(kn), kp, "key given twice")
			} else {
				// The first spelling's value was read: its own checks
				// still run (errorf marks the key failed, which skipped
				// them: pollingInterval: 2h beside interval: 15s said
				// the second name alone, not the 2h).
				failed := d.failed[kp]
				d.errorf(position(kn), kp, "%s is the old name of %s, given too; keep %s", oldOf(was, written, key), key, key)
				if d.failed != nil && !failed {
					delete(d.failed, kp)
				}
				if n := len(d.errs); n > 0 && d.dropped == 0 {
					d.errs[n-1].Key = childPath(path, written) // this key, not the first one's spelling
				}
			}
			continue
		}
		seen[key] = written
		if written != key {
			d.deprecated(position(kn), childPath(path, written), key)
			if d.spelled == nil {
				d.spelled = map[string]string{}
			}
			d.spelled[kp] = childPath(path, written)
		}
		d.pos[kp] = position(kn)
		d.decode(it.Value(), fieldByIndex(v, f.index), kp)
	}
}

// oldOf is, of the two spellings a and b of key, the one that is not key.
func oldOf(a, b, key string) string {
	if a == key {
		return b
	}
	return a
}

// deprecated records that the key at path (as written) is an old name of
// key.
func (d *strictDecoder) deprecated(pos *token.Position, path, key string) {
	switch {
	case len(d.deprecations) > MaxErrors:
		return
	case len(d.deprecations) == MaxErrors: // a 10,000-target file is not 20,000 warnings
		d.deprecations = append(d.deprecations, Error{File: d.file, Msg: fmt.Sprintf("more deprecated keys not listed (the first %d found are above)", MaxErrors)})
		return
	}
	e := Error{File: d.file, Key: path, Msg: fmt.Sprintf("deprecated key, read until the next release: rename it %s (KEDA's name)", key)}
	if pos != nil {
		e.Line, e.Column = pos.Line, pos.Column
	}
	d.deprecations = append(d.deprecations, e)
}

func fieldByIndex(v reflect.Value, index []int) reflect.Value {
	for _, i := range index {
		v = v.Field(i)
	}
	return v
}

func (d *strictDecoder) leaf(n ast.Node, v reflect.Value, path string) {
	// This package's own scalar types are decoded from the token directly:
	// goccy's unmarshaler path formats the whole document for every value
	// (quadratic in the file's size).
	switch p := v.Addr().Interface().(type) {
	case *Quantity:
		d.scalar(n, path, v.Type(), p.UnmarshalYAML)
		return
	case *model.Duration:
		// KEDA's pollingInterval and cooldownPeriod are integer seconds in
		// a ScaledObject; under those names (not their old ones) an
		// unquoted integer is read as KEDA reads it.
		_, old := d.spelled[path]
		keda := kedaSeconds[lastKey(path)] && !old && n.Type() == ast.IntegerType
		d.scalar(n, path, v.Type(), func(b []byte) error {
			if keda {
				return kedaDuration(p, string(b))
			}
			dur, err := model.ParseDuration(string(b))
			if err != nil && bigIntRE.Match(b) {
				// Integer seconds are KEDA's keys' alone; elsewhere a
				// duration names its unit.
				if kedaSeconds[lastKey(path)] && old {
					return fmt.Errorf("%s has no unit: write %ss for seconds (integer seconds are read under KEDA's name, %s)", b, b, lastKey(path))
				}
				return fmt.Errorf("%s has no unit: write %ss for seconds or %sms for milliseconds", b, b, b)
			}
			if err != nil {
				if msg, ok := fractionHint(string(b)); ok {
					return errors.New(msg)
				}
				return err
			}
			*p = dur
			return nil
		})
		return
	case *recommend.Signal:
		d.name(n, path, p.UnmarshalText)
		return
	case *modelserver.Server:
		d.name(n, path, p.UnmarshalText)
		return
	}
	if isInt(v.Type()) && n.Type() != ast.IntegerType {
		// goccy converts 1.5 to 1 and "4" to 4 silently; a replica count
		// or a number of seconds is written as an integer.
		if tk := n.GetToken(); tk != nil && tk.Type == token.StringType && bigIntRE.MatchString(tk.Value) {
			// An unquoted integer too large for int64 is scanned as a string.
			d.errorf(position(n), path, "%s is out of range; expected %s", tk.Value, expected(v.Type()))
			return
		}
		d.errorf(position(n), path, "expected %s, got %s", expected(v.Type()), describe(n))
		return
	}
	if isInt(v.Type()) {
		tk := n.GetToken()
		if tk == nil || !decimalRE.MatchString(tk.Value) {
			// goccy reads 017 as octal 15 (YAML 1.1; 1.2 reads 17), and
			// 0x10, 0o17, 0b11 and 1_000 as numbers: a count is written in
			// decimal, so none is guessed.
			d.errorf(position(n), path, "%s: write %s in decimal digits (0x, 0o, 0b, _ and a leading 0 are not read)", describe(n), expected(v.Type()))
			return
		}
		if in, ok := n.(*ast.IntegerNode); ok && !fitsInt(in.Value, v) {
			d.errorf(position(n), path, "%s is out of range for %s", tk.Value, intRange(v.Type()))
			return
		}
	}
	if v.Kind() == reflect.String {
		switch n.Type() {
		case ast.MappingType, ast.MappingValueType, ast.SequenceType:
			// goccy reads an unquoted URL inside {...} as a mapping;
			// point at its start, not at the ':' it split on.
			pos := position(n)
			switch m := n.(type) {
			case *ast.MappingValueNode:
				pos = position(m.Key)
			case *ast.MappingNode:
				if len(m.Values) > 0 {
					pos = position(m.Values[0].Key)
				}
			}
			d.errorf(pos, path, "expected a string, got %s; quote a value that holds ': ', '{' or '[' (or a URL inside {...})", describe(n))
			return
		}
	}
	if plainScalar(n, v) {
		return
	}
	if mn, ok := n.(ast.MapNode); ok && v.Kind() == reflect.Map {
		// A map's entries (prometheus.series_labels') are checked after
		// decoding: each at its own key's line and column.
		for it := mn.MapRange(); it.Next(); {
			if sn, ok := it.Key().(*ast.StringNode); ok {
				d.pos[childPath(path, sn.Value)] = position(sn)
			}
		}
	}
	opts := []yaml.DecodeOption{yaml.Strict()}
	pt := reflect.PointerTo(v.Type())
	if pt.Implements(jsonUnmarshaler) && !pt.Implements(bytesUnmarshaler) && !pt.Implements(interfaceUnmarshaler) {
		opts = append(opts, yaml.UseJSONUnmarshaler())
	}
	if err := yaml.NodeToValue(n, v.Addr().Interface(), opts...); err != nil {
		pos := position(n)
		msg := err.Error()
		var ye yaml.Error
		if errors.As(err, &ye) {
			msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				pos = tk.Position
			}
		}
		if isK8sQuantity(v.Type()) {
			msg = "not a quantity: " + describe(n) // the library's message is its regular expression
		} else if strings.Contains(msg, "cannot unmarshal") || v.Type() == reflect.TypeFor[map[string]string]() && strings.Contains(msg, "was used where") {
			msg = "got " + describe(n) // the library's message names Go types
		}
		if pc, ok := percentFraction(n, path); ok {
			// tune --max-miss takes percent; the file's key a fraction.
			d.errorf(pos, path, "%s; expected a fraction of requests, not a percentage: %s%% is %s", strings.TrimSpace(msg), pc, percentToFraction(pc))
			return
		}
		d.errorf(pos, path, "%s; expected %s", strings.TrimSpace(msg), expected(v.Type()))
	}
}

// plainScalar sets v from n where goccy's NodeToValue would set the same
// without a decoder of its own (one per value: a third of a 10,000-target
// load): a plain string, bool or in-range integer field from a string,
// bool or integer node. It reports whether it did.
func plainScalar(n ast.Node, v reflect.Value) bool {
	if v.Type().PkgPath() != "" || v.Type().Name() != v.Kind().String() {
		return false // a named type: its own rules (unmarshalers, enums)
	}
	switch v.Kind() {
	case reflect.String:
		switch n.Type() {
		case ast.StringType:
			if sn, ok := n.(*ast.StringNode); ok {
				v.SetString(sn.Value)
				return true
			}
		case ast.IntegerType, ast.FloatType, ast.BoolType, ast.InfinityType, ast.NanType:
			// An unquoted name such as 007, 0x1F, 1_0 or False: the text
			// as written (goccy would print its number or bool: 7, 31,
			// 10, false; a KEDA query for target="007" found nothing).
			if tk := n.GetToken(); tk != nil {
				v.SetString(tk.Value)
				return true
			}
		}
	case reflect.Bool:
		if bn, ok := n.(*ast.BoolNode); ok {
			v.SetBool(bn.Value)
			return true
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if in, ok := n.(*ast.IntegerNode); ok && fitsInt(in.Value, v) {
			i, _ := asInt64(in.Value)
			v.SetInt(i)
			return true
		}
	}
	return false
}

// expected names what a leaf of type t accepts, for error messages.
func expected(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[model.Duration]():
		return "a duration such as 15s, 3m or 1h30m"
	case reflect.TypeFor[Quantity]():
		return "a number, a percentage such as 80% (kv, demand, cpu) or a duration such as 2s (ttft, queuewait)"
	case reflect.TypeFor[intstr.IntOrString]():
		return "a port number 1..65535 or a container port's name"
	case reflect.TypeFor[map[string]string]():
		// prometheus.series_labels, the one such field.
		return "a mapping of label name to value, one key per label, e.g. {namespace: infscale, service: infscale}"
	}
	if isK8sQuantity(t) {
		return "a Kubernetes quantity such as 0.1 or 100m"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a value of type " + t.String()
}

var bigIntRE = regexp.MustCompile(`^[-+]?[0-9]+$`)

// fractionRE is a decimal fraction with an optional unit: 1.5, 0.5s, 1.5m.
var fractionRE = regexp.MustCompile(`^[0-9]*\.[0-9]+([a-z]*)$`)

// fractionHint words the error of a duration written with a fraction
// (Prometheus durations take none: model.ParseDuration says `unknown unit
// "."`), naming the same duration in whole units when it is a whole number
// of milliseconds: "1.5m: a duration takes no fractions: write 1m30s".
func fractionHint(s string) (string, bool) {
	m := fractionRE.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	unit := m[1]
	in := s
	if unit == "" {
		in += "s"
	}
	d, err := time.ParseDuration(in)
	if err != nil || d <= 0 || d%time.Millisecond != 0 {
		return s + ": a duration takes no fractions: write it in whole units of a smaller one, e.g. 1500ms for 1.5s", true
	}
	if unit == "" {
		return fmt.Sprintf("%s has no unit and a duration takes no fractions: write %s for %s seconds", s, model.Duration(d), s), true
	}
	return fmt.Sprintf("%s: a duration takes no fractions: write %s", s, model.Duration(d)), true
}

// kedaSeconds are the keys named after a KEDA ScaledObject's integer
// seconds (spec.pollingInterval, spec.cooldownPeriod): an integer there is
// seconds, beside a duration string (docs/config.md).
var kedaSeconds = map[string]bool{"pollingInterval": true, "cooldownPeriod": true}

// maxKEDASeconds is the most seconds an integer kedaSeconds key may give:
// KEDA's fields are int32.
const maxKEDASeconds = math.MaxInt32

// kedaDuration reads s, an integer of seconds as KEDA writes one, into p.
func kedaDuration(p *model.Duration, s string) error {
	if !decimalRE.MatchString(s) {
		return fmt.Errorf("%s: write the seconds in decimal digits (0x, 0o, 0b, _ and a leading 0 are not read), e.g. 30, or a duration such as 30s", s)
	}
	secs, err := strconv.ParseInt(s, 10, 64)
	if err != nil || secs < 0 || secs > maxKEDASeconds {
		return fmt.Errorf("%s seconds is out of range: want 0 to %d (KEDA's int32), or a duration such as 30s", s, maxKEDASeconds)
	}
	*p = model.Duration(time.Duration(secs) * time.Second)
	return nil
}

// lastKey is the last key of a key path: targets[0].zero.cooldownPeriod
// is cooldownPeriod.
func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// decimalRE is an integer as infscale reads one: decimal digits, no
// leading 0 (but 0 itself), an optional sign.
var decimalRE = regexp.MustCompile(`^[-+]?(0|[1-9][0-9]*)$`)

// fitsInt reports whether goccy's integer value x (int64 or uint64) fits
// integer v's type.
func fitsInt(x any, v reflect.Value) bool {
	if v.Kind() >= reflect.Int && v.Kind() <= reflect.Int64 {
		i, ok := asInt64(x)
		return ok && !v.OverflowInt(i)
	}
	switch x := x.(type) {
	case uint64:
		return !v.OverflowUint(x)
	case int64, int:
		i, _ := asInt64(x)
		return i >= 0 && !v.OverflowUint(uint64(i))
	}
	return false
}

// asInt64 is goccy's integer value x (int, int64 or uint64) as an int64,
// false when it is not one or is above math.MaxInt64.
func asInt64(x any) (int64, bool) {
	switch x := x.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case uint64:
		return int64(x), x <= math.MaxInt64
	}
	return 0, false
}

// intRange names integer type t's range, for an out-of-range value.
func intRange(t reflect.Type) string {
	bits := t.Bits()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr {
		return fmt.Sprintf("an integer 0..%d", uint64(1)<<bits-1)
	}
	return fmt.Sprintf("an integer %d..%d", -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1)
}

// isK8sQuantity reports whether t is k8s.io/apimachinery's
// resource.Quantity (the HPA tolerance), named without importing it.
func isK8sQuantity(t reflect.Type) bool {
	return t.PkgPath() == "k8s.io/apimachinery/pkg/api/resource" && t.Name() == "Quantity"
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func keyList(fields map[string]field) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func describe(n ast.Node) string {
	switch n.Type() {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a list"
	case ast.IntegerType, ast.FloatType, ast.BoolType, ast.NanType, ast.InfinityType:
		return n.GetToken().Value
	case ast.StringType:
		if sn, ok := n.(*ast.StringNode); ok {
			return "the string " + quoteShort(sn.Value)
		}
	}
	return quoteShort(n.String())
}

// percentFraction reports whether n, at path, is a tune: block's
// max_miss written as a percentage ("0.1%"), and the number before the %.
func percentFraction(n ast.Node, path string) (string, bool) {
	sn, ok := n.(*ast.StringNode)
	if !ok || !strings.HasSuffix(path, ".tune.max_miss") {
		return "", false
	}
	pc, ok := strings.CutSuffix(strings.TrimSpace(sn.Value), "%")
	if _, err := strconv.ParseFloat(strings.TrimSpace(pc), 64); !ok || err != nil {
		return "", false
	}
	return strings.TrimSpace(pc), true
}

// percentToFraction writes percentage pc (a number's text) as the
// fraction it is: "0.1" -> "0.001".
func percentToFraction(pc string) string {
	v, _ := strconv.ParseFloat(pc, 64)
	return strconv.FormatFloat(v/100, 'g', -1, 64)
}

// quoteShort quotes s for a message, cut to 40 characters: a binary file's
// text is not echoed whole.
func quoteShort(s string) string {
	const limit = 40
	if r := []rune(s); len(r) > limit {
		return fmt.Sprintf("%q... (%d bytes)", string(r[:limit]), len(s))
	}
	return fmt.Sprintf("%q", s)
}

// scalar decodes a scalar node's text with set, reporting a non-scalar or a
// failure at the node.
func (d *strictDecoder) scalar(n ast.Node, path string, t reflect.Type, set func([]byte) error) {
	switch n.Type() {
	case ast.StringType, ast.IntegerType, ast.FloatType, ast.BoolType, ast.InfinityType, ast.NanType:
	default:
		d.errorf(position(n), path, "expected %s, got %s", expected(t), describe(n))
		return
	}
	text := n.GetToken().Value
	if sn, ok := n.(*ast.StringNode); ok {
		text = sn.Value
	}
	if err := set([]byte(text)); err != nil {
		d.errorf(position(n), path, "%v; expected %s", err, expected(t))
	}
}

// name decodes a name from its vocabulary (a signal, a server) with set,
// whose error lists the allowed names.
func (d *strictDecoder) name(n ast.Node, path string, set func([]byte) error) {
	tk := n.GetToken()
	if n.Type() != ast.StringType || tk == nil {
		d.errorf(position(n), path, "expected a name, got %s", describe(n))
		return
	}
	text := tk.Value
	if sn, ok := n.(*ast.StringNode); ok {
		text = sn.Value
	}
	if text == "" {
		return // as absent: the default, or the rule that it is required
	}
	if err := set([]byte(text)); err != nil {
		d.errorf(position(n), path, "%v", err)
	} else {
		d.named[path] = true
	}
}

// keyAliases are the HPA's names of keys infscale spells as KEDA does.
var keyAliases = map[string]string{"minReplicas": "minReplicaCount", "maxReplicas": "maxReplicaCount"}

// didYouMean returns the allowed key K that written most likely meant (the
// one the HPA names so, the one in another case, or the one nearest within
// two edits, a typo, behaviour for behavior, and a third of its length)
// and the hint "; did you mean K?"; both "" when none is that close or two
// are.
func didYouMean(written string, fields map[string]field) (key, hint string) {
	if k, ok := keyAliases[written]; ok {
		if _, ok := fields[k]; ok {
			return k, fmt.Sprintf("; did you mean %s? (the HPA's %s is KEDA's %s here)", k, written, k)
		}
	}
	best, bestD, tie := "", 3, false
	for k := range fields {
		d := editDistance(strings.ToLower(written), strings.ToLower(k))
		if d > 2 || 3*d > len(written) {
			continue
		}
		switch {
		case d < bestD:
			best, bestD, tie = k, d, false
		case d == bestD:
			tie = true
		}
	}
	if best == "" || tie {
		return "", ""
	}
	return best, "; did you mean " + best + "?"
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
