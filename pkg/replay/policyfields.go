package replay

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/infscale/infscale/pkg/recommend"
)

// fieldCols records which part of a policy string set each recommend.Policy
// field, so that recommend.Policy.Validate's FieldErrors (which own the
// rules) are reported at the column of the text that set the field.
type fieldCols map[string]fieldCol

// fieldCol is where a field's value starts (1-based column of the whole
// policy string), the name the string calls it and its text.
type fieldCol struct {
	col   int
	label string
	text  string
}

// metric records metrics[i], set by SIGNAL:TARGET whose target is at col.
func (fc fieldCols) metric(i, col int, sig recommend.Signal, text string) {
	fc["metrics["+strconv.Itoa(i)+"]"] = fieldCol{col, sig.String() + " target", text}
}

// option records the field that OPTION=VALUE (value at col) just set in p.
func (fc fieldCols) option(p *recommend.Policy, k, v string, col int) {
	path := k
	switch k {
	case "cooldown":
		path = "zero"
	case "uppods", "uppercent":
		path = "behavior.scaleUp.policies[" + strconv.Itoa(len(p.Behavior.ScaleUp.Policies)-1) + "]"
	case "downpods", "downpercent":
		path = "behavior.scaleDown.policies[" + strconv.Itoa(len(p.Behavior.ScaleDown.Policies)-1) + "]"
	case "upwindow":
		path = "behavior.scaleUp.stabilizationWindowSeconds"
	case "downwindow":
		path = "behavior.scaleDown.stabilizationWindowSeconds"
	case "upselect":
		path = "behavior.scaleUp.selectPolicy"
	case "downselect":
		path = "behavior.scaleDown.selectPolicy"
	case "hold":
		path = "hold.break_even"
	case "rampbound":
		path = "ramp_bound"
	case "schedule":
		path = "schedule[" + strconv.Itoa(len(p.Schedule)-1) + "]"
	}
	fc[path] = fieldCol{col, k, v}
}

// errorAt reports err, recommend.Policy.Validate's FieldErrors, one line per
// problem at the column of the part that set the field ("policy "queue:24,
// uppods=0": at column 17: uppods: 0 must be >= 1"), each distinct line
// once; a field no part set (e.g. no metric) is at column off+1.
func (fc fieldCols) errorAt(full string, off int, err error) error {
	var fes recommend.FieldErrors
	if !errors.As(err, &fes) {
		return fmt.Errorf("policy %q: %w", full, err)
	}
	lines := make([]error, 0, len(fes))
	seen := map[string]bool{}
	for _, fe := range fes {
		col, label := off+1, fe.Path
		for path := fe.Path; path != ""; path = parentPath(path) {
			f, ok := fc[path]
			if !ok {
				continue
			}
			col, label = f.col, f.label
			if rest := strings.TrimPrefix(fe.Path, path+"."); strings.HasPrefix(path, "schedule[") && rest != fe.Path {
				col += scheduleOffset(f.text, recommend.ScheduleField(rest))
				label += " " + rest
			}
			break
		}
		// One option can set two fields (tolerance= sets tolerance.up and
		// .down): the same problem at the same column is said once.
		msg := fe.Msg
		if f, ok := fc[fe.Also]; ok {
			msg = fe.MsgAt(fmt.Sprintf("at column %d", f.col))
		}
		line := policyError(full, col, "%s: %s", label, msg)
		if !seen[line.Error()] {
			seen[line.Error()] = true
			lines = append(lines, line)
		}
	}
	return errors.Join(lines...)
}

// parentPath drops a path's last part: a.b[1].c → a.b[1] → a.b → a.
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i > 0 {
		return path[:i]
	}
	return ""
}

// scheduleOffset is the offset of the field-th ';'-separated part of a
// schedule value, after its leading spaces (0 for an unknown field).
func scheduleOffset(v string, field int) int {
	off := 0
	for range max(field, 0) {
		i := strings.IndexByte(v[off:], ';')
		if i < 0 {
			return 0
		}
		off += i + 1
	}
	return off + len(v[off:]) - len(strings.TrimLeft(v[off:], " "))
}
