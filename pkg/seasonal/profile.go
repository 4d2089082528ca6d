package seasonal

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Profile is the arrival rate by day of week and hour of day.
type Profile struct {
	// Location is the time zone the hours are read in.
	Location *time.Location
	// Rate[d][h] is the mean arrival rate (requests/s) on weekday d
	// (time.Sunday = 0) at hour h, NaN when no data fell there; Hours[d][h]
	// the hours of data averaged.
	Rate  [7][24]float64
	Hours [7][24]float64
	// Occurrences[d][h] is the rate of each clock hour of data that fell on
	// weekday d at hour h, oldest first (one per week of history): what a
	// floor's recurrence is counted on (ProposeFloor).
	Occurrences [7][24][]float64
	// HourOfDay is the mean rate per hour over all days; DayOfWeek the mean
	// rate per weekday. NaN without data.
	HourOfDay [24]float64
	DayOfWeek [7]float64
	// Mean is the mean rate over all data.
	Mean float64
	// PeakHour is the hour of day with the highest HourOfDay rate.
	PeakHour int
	// WeekendRatio is the mean Saturday+Sunday rate over the mean Monday-
	// Friday rate (NaN when either is missing).
	WeekendRatio float64
	// VarianceExplained is the R² of the separable model rate(d, h) =
	// DayOfWeek[d] × HourOfDay[h] / Mean over the hourly rates: the share of
	// the hour-to-hour variance the weekly pattern accounts for (it needs
	// only one week; a full hour-of-week profile would fit one week exactly).
	VarianceExplained float64
	// Days is the span of data, in days (hours with data / 24).
	Days float64
}

// ErrTooShort means less than a day of data.
var ErrTooShort = errors.New("less than 24 hours of data: a profile needs at least a day (a week to see weekdays)")

// Build profiles per-step arrivals: arrivals[j] requests arrived in the
// step ending at start + j·step (j >= 1; arrivals[0] is ignored), and
// known[j] false excludes a step (a gap). Steps are grouped into clock
// hours in loc; an hour with less than half its steps known is dropped.
func Build(start time.Time, step time.Duration, arrivals []float64, known []bool, loc *time.Location) (Profile, error) {
	if loc == nil {
		loc = time.UTC
	}
	p := Profile{Location: loc}
	// An hour is a clock hour in loc, keyed by the wall clock: in a zone off
	// UTC by a fraction of an hour (Asia/Kolkata +05:30) it runs from :00
	// local, as a schedule's cron reads it (truncating the instant ran from
	// :30 to :30), and the hour a DST fall-back repeats is one hour of its
	// day (two made one day's hour look like two weeks' at ProposeFloor).
	type clock struct{ y, m, d, h int }
	type hour struct {
		c          clock
		t          time.Time
		sum, steps float64
	}
	var hours []hour
	per := float64(time.Hour / step)
	for j := 1; j < len(arrivals); j++ {
		if j < len(known) && !known[j] {
			continue
		}
		t := start.Add(time.Duration(j)*step - step/2).In(loc)
		y, m, d := t.Date()
		c := clock{y, int(m), d, t.Hour()}
		if n := len(hours); n == 0 || hours[n-1].c != c {
			hours = append(hours, hour{c: c, t: t})
		}
		h := &hours[len(hours)-1]
		h.sum += arrivals[j]
		h.steps++
	}
	type obs struct {
		d, h int
		r    float64
	}
	var data []obs
	for _, h := range hours {
		if h.steps < per/2 {
			continue
		}
		r := h.sum / (h.steps * step.Seconds())
		data = append(data, obs{int(h.t.Weekday()), h.t.Hour(), r})
	}
	if len(data) < 24 {
		return p, ErrTooShort
	}
	var sumDH [7][24]float64
	var sumH, nH [24]float64
	var sumD, nD [7]float64
	total := 0.0
	for _, o := range data {
		sumDH[o.d][o.h] += o.r
		p.Occurrences[o.d][o.h] = append(p.Occurrences[o.d][o.h], o.r)
		p.Hours[o.d][o.h]++
		sumH[o.h] += o.r
		nH[o.h]++
		sumD[o.d] += o.r
		nD[o.d]++
		total += o.r
	}
	p.Mean = total / float64(len(data))
	p.Days = float64(len(data)) / 24
	for d := range 7 {
		p.DayOfWeek[d] = div(sumD[d], nD[d])
		for h := range 24 {
			p.Rate[d][h] = div(sumDH[d][h], p.Hours[d][h])
		}
	}
	peak := math.Inf(-1)
	for h := range 24 {
		p.HourOfDay[h] = div(sumH[h], nH[h])
		if p.HourOfDay[h] > peak {
			peak, p.PeakHour = p.HourOfDay[h], h
		}
	}
	var we, wd, nwe, nwd float64
	for d := range 7 {
		if math.IsNaN(p.DayOfWeek[d]) {
			continue
		}
		if d == int(time.Saturday) || d == int(time.Sunday) {
			we += sumD[d]
			nwe += nD[d]
		} else {
			wd += sumD[d]
			nwd += nD[d]
		}
	}
	p.WeekendRatio = div(div(we, nwe), div(wd, nwd))
	var ssRes, ssTot float64
	for _, o := range data {
		fit := p.DayOfWeek[o.d] * p.HourOfDay[o.h] / p.Mean
		ssRes += (o.r - fit) * (o.r - fit)
		ssTot += (o.r - p.Mean) * (o.r - p.Mean)
	}
	p.VarianceExplained = math.NaN()
	if ssTot > 0 {
		p.VarianceExplained = 1 - ssRes/ssTot
	}
	return p, nil
}

func div(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// Expected is the profile's expected rate at weekday d, hour h: the
// hour-of-week mean when that bin has data, else the separable model.
func (p Profile) Expected(d, h int) float64 {
	if r := p.Rate[d][h]; !math.IsNaN(r) {
		return r
	}
	return p.DayOfWeek[d] * p.HourOfDay[h] / p.Mean
}

// CheckStep reports whether steps of length step, on a grid that starts at
// a multiple of step since the zero time (backtest's: --start truncated to
// a step), each lie within one clock hour of loc over [from, to], as Build
// groups them. They do when step divides an hour and every UTC offset loc
// takes in [from, to] (read at each hour and at to) is a multiple of it:
// a 7m step straddles hours everywhere (one hour held 8 or 9 steps, some
// from its neighbours); 1h in Asia/Kolkata (+05:30) splits each step
// between two local hours. The error says the longest step that fits.
func CheckStep(step time.Duration, loc *time.Location, from, to time.Time) error {
	if step <= 0 || time.Hour%step != 0 {
		return fmt.Errorf("%s does not divide an hour, so its steps straddle clock hours: want one that does (e.g. 30s, 1m, 5m, 15m)", step)
	}
	if loc == nil {
		loc = time.UTC
	}
	fit := time.Hour
	odd := "" // a zone offset that is not a whole hour, to name
	for t := from; ; t = t.Add(time.Hour) {
		if t.After(to) {
			t = to
		}
		_, off := t.In(loc).Zone()
		d := time.Duration(off) * time.Second
		if d%time.Hour != 0 && odd == "" {
			odd = t.In(loc).Format("-07:00")
		}
		fit = gcd(fit, d.Abs())
		if !t.Before(to) {
			break
		}
	}
	if fit%step != 0 {
		return fmt.Errorf("%s is UTC%s in the range, so %s steps straddle its clock hours: want one that divides %s (e.g. 30s, 1m, 5m)", loc, odd, step, fit)
	}
	return nil
}

func gcd(a, b time.Duration) time.Duration {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
