package plan

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim/workload"
)

// Rate profiles from files: a list of {at_s, rate_rps} points, or the
// arrivals of a request trace counted per window.

// MaxProfileBytes bounds a rate-profile file.
const MaxProfileBytes = 4 << 20

// ParseRateProfile reads a rate profile: CSV with an at_s,rate_rps header,
// or a YAML/JSON list of {at_s, rate_rps}. name is used in errors. The
// points are checked as workload.rate_profile is.
func ParseRateProfile(r io.Reader, name string) ([]workload.RatePoint, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > MaxProfileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, MaxProfileBytes)
	}
	var pts []workload.RatePoint
	if t := bytes.TrimSpace(b); len(t) > 0 && (t[0] == '[' || t[0] == '-') {
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&pts); err != nil {
			return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
		}
	} else if pts, err = parseProfileCSV(b, name); err != nil {
		return nil, err
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%s: no points", name)
	}
	if err := (workload.Spec{RateProfile: pts}).ValidateRateProfile("profile"); err != nil {
		var fe *scenario.FieldError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("%s: %s: %s", name, strings.TrimPrefix(fe.Field, "profile."), fe.Reason)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return pts, nil
}

func parseProfileCSV(b []byte, name string) ([]workload.RatePoint, error) {
	cr := csv.NewReader(bytes.NewReader(b))
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	at, rate := -1, -1
	for i, h := range head {
		switch strings.ToLower(strings.TrimSpace(h)) {
		case "at_s":
			at = i
		case "rate_rps":
			rate = i
		}
	}
	if at < 0 || rate < 0 {
		return nil, fmt.Errorf("%s:1: the header needs at_s and rate_rps columns (or give a YAML/JSON list of {at_s, rate_rps})", name)
	}
	var pts []workload.RatePoint
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(pts) >= workload.MaxProfilePoints {
			return nil, fmt.Errorf("%s:%d: more than %d points", name, line, workload.MaxProfilePoints)
		}
		a, err1 := strconv.ParseFloat(strings.TrimSpace(rec[at]), 64)
		v, err2 := strconv.ParseFloat(strings.TrimSpace(rec[rate]), 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s:%d: at_s %q and rate_rps %q must be numbers", name, line, rec[at], rec[rate])
		}
		pts = append(pts, workload.RatePoint{AtS: a, RateRPS: v})
	}
	return pts, nil
}

// TraceProfile is a rate profile derived from a trace's arrivals.
type TraceProfile struct {
	Points []workload.RatePoint `json:"points"`
	EndS   float64              `json:"end_s"`
	// TraceWindowS is the window of the trace each point counts arrivals
	// in (WindowS / TimeScale).
	TraceWindowS float64 `json:"trace_window_s"`
	// InputTokens and OutputTokens follow the trace's lengths (quantile
	// buckets).
	InputTokens, OutputTokens workload.LengthSpec `json:"-"`
}

// lengthBuckets is how many quantile buckets stand for a trace's lengths.
const lengthBuckets = 32

// ProfileFromTrace counts the trace's arrivals per window of windowS /
// timeScale seconds and makes each count a rate over the window (so the
// rates are the trace's), its time stretched by timeScale: an hour of
// trace with timeScale 24 becomes a day of profile in windowS windows. A
// last window shorter than a tenth of the others joins the one before.
// The trace's lengths become quantile buckets.
func ProfileFromTrace(recs []workload.TraceRecord, windowS, timeScale float64) (TraceProfile, error) {
	switch {
	case len(recs) < 2:
		return TraceProfile{}, fmt.Errorf("the trace has %d requests: a rate profile needs arrivals over time", len(recs))
	case !(windowS > 0) || math.IsInf(windowS, 0):
		return TraceProfile{}, fmt.Errorf("the window must be > 0 s, got %g", windowS)
	case !(timeScale > 0) || math.IsInf(timeScale, 0):
		return TraceProfile{}, fmt.Errorf("the time scale must be > 0, got %g", timeScale)
	}
	span := recs[len(recs)-1].ArrivalS
	tw := windowS / timeScale
	if !(span > 0) {
		return TraceProfile{}, errors.New("every request of the trace arrives at once: no rate over time")
	}
	n := int(math.Ceil(span/tw - 1e-9))
	if n > 1 && span-float64(n-1)*tw < tw/10 {
		n-- // a sliver of a last window joins the one before
	}
	if n > workload.MaxProfilePoints {
		return TraceProfile{}, fmt.Errorf("%d windows of %g s of trace, more than %d: use a longer window or a larger time scale", n, tw, workload.MaxProfilePoints)
	}
	counts := make([]int, max(n, 1))
	for _, r := range recs {
		counts[min(int(r.ArrivalS/tw), len(counts)-1)]++
	}
	tp := TraceProfile{EndS: span * timeScale, TraceWindowS: tw}
	for i, c := range counts {
		d := tw
		if i == len(counts)-1 {
			d = span - float64(i)*tw
		}
		tp.Points = append(tp.Points, workload.RatePoint{AtS: float64(i) * windowS, RateRPS: math.Round(float64(c)/d*1e6) / 1e6})
	}
	in, out := make([]int, len(recs)), make([]int, len(recs))
	for i, r := range recs {
		in[i], out[i] = r.InputTokens, r.OutputTokens
	}
	tp.InputTokens, tp.OutputTokens = quantileBuckets(in), quantileBuckets(out)
	return tp, nil
}

// quantileBuckets stands for a sample by lengthBuckets equal-weight
// buckets between its quantiles (uniform inside each).
func quantileBuckets(v []int) workload.LengthSpec {
	s := slices.Clone(v)
	slices.Sort(s)
	spec := workload.LengthSpec{Type: workload.LengthBuckets}
	k := min(lengthBuckets, len(s))
	for i := range k {
		lo, hi := s[i*len(s)/k], s[min((i+1)*len(s)/k, len(s)-1)]
		if i > 0 {
			lo = max(lo, spec.Buckets[len(spec.Buckets)-1].Max)
		}
		hi = max(hi, lo)
		spec.Buckets = append(spec.Buckets, workload.Bucket{Weight: 1, Min: max(lo, 1), Max: max(hi, 1)})
	}
	return spec
}
