package seasonal

import (
	"fmt"
	"io"
	"strings"
)

// WriteScheduleYAML writes the windows as the `schedule:` block of a serve
// config target (pkg/config Window: cron, duration, desiredReplicas, timezone).
func WriteScheduleYAML(w io.Writer, ws []Window, zone string) {
	fmt.Fprintln(w, "schedule:")
	if len(ws) == 0 {
		fmt.Fprintln(w, "  [] # no hour needs more than the policy's minimum")
	}
	for _, x := range ws {
		fmt.Fprintf(w, "  - cron: %q\n    duration: %dh\n    desiredReplicas: %d\n    timezone: %s\n", x.Cron(), x.Hours, x.Min, zone)
	}
}

// WriteKEDACron writes the windows as KEDA cron scaler triggers
// (metadata timezone, start, end, desiredReplicas), to add beside the
// prometheus trigger of a ScaledObject: KEDA takes the largest.
func WriteKEDACron(w io.Writer, ws []Window, zone string) {
	fmt.Fprintln(w, "triggers:")
	if len(ws) == 0 {
		fmt.Fprintln(w, "  [] # no hour needs more than the policy's minimum")
	}
	for _, x := range ws {
		fmt.Fprintf(w, "  - type: cron\n    metadata:\n      timezone: %s\n      start: %q\n      end: %q\n      desiredReplicas: \"%d\"\n",
			zone, x.Cron(), x.EndCron(), x.Min)
	}
}

// PolicyOptions renders the windows as the replay's policy options
// (",schedule=CRON;DURATION;MIN;ZONE" each), to append to a policy string.
// Day lists are ranges, never commas, so they stay inside one option.
func PolicyOptions(ws []Window, zone string) string {
	var b strings.Builder
	for _, x := range ws {
		fmt.Fprintf(&b, ",schedule=%s;%dh;%d;%s", x.Cron(), x.Hours, x.Min, zone)
	}
	return b.String()
}
