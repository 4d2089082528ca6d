package replica

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText prints the fitted parameters and a table of every point with
// the fitted model's prediction and its error: the decode points (batch
// under the column batchLabel, the measured step under stepLabel), fitted
// then held out, and the prefill points that have a prediction
// (PredictPrefill), each decode point with its context per sequence, and
// KVNote and Warnings. Each line is indented by two spaces.
func (c Calibration) WriteText(w io.Writer, batchLabel, stepLabel string) error {
	kv := ""
	if c.KVBandwidthEfficiency > 0 {
		kv = fmt.Sprintf(" (KV %.3f)", c.KVBandwidthEfficiency)
	}
	fixed := fmt.Sprintf("step overhead %.3f ms", c.StepOverheadS*1000)
	if c.LayerStepCostS > 0 {
		fixed = fmt.Sprintf("layer step cost %.2f us", c.LayerStepCostS*1e6)
	}
	fmt.Fprintf(w, "  bandwidth efficiency %.3f%s, %s, sequence step cost %.1f us, MFU %.3f, request overhead %.1f ms\n",
		c.BandwidthEfficiency, kv, fixed, c.SequenceStepCostS*1e6, c.MFU, c.RequestOverheadS*1000)
	if c.KVNote != "" {
		fmt.Fprintf(w, "  %s\n", c.KVNote)
	}
	for _, warn := range c.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "  \t%s\tcontext/seq\t%s\tmodel ms\terror\t\n", batchLabel, stepLabel)
	for _, set := range []struct {
		name   string
		points []StepPoint
	}{{"fit", c.Fit}, {"held out", c.HeldOut}} {
		for _, p := range set.points {
			fmt.Fprintf(tw, "  %s\t%d\t%.0f\t%.2f\t%.2f\t%+.1f%%\t\n", set.name, p.Batch, float64(p.ContextTokens)/float64(p.Batch), p.StepS*1000, p.PredictedS*1000, 100*p.Error())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var pre []PrefillPoint
	for _, p := range c.Prefill {
		if p.PredictedS > 0 {
			pre = append(pre, p)
		}
	}
	if len(pre)+len(c.PrefillHeldOut) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  \tprompt tokens\tTTFT ms\tmodel ms\terror\t")
	for _, set := range []struct {
		name   string
		points []PrefillPoint
	}{{"fit", pre}, {"held out", c.PrefillHeldOut}} {
		for _, p := range set.points {
			fmt.Fprintf(tw, "  %s\t%d\t%.1f\t%.1f\t%+.1f%%\t\n", set.name, p.PromptTokens, p.TTFTS*1000, p.PredictedS*1000, 100*p.Error())
		}
	}
	return tw.Flush()
}
