package uncertainty

import (
	"fmt"
	"slices"
	"sort"
)

// Tally counts held-out figures and how many of them fell in their bands.
type Tally struct {
	N      int `json:"n"`       // figures with a band
	In80   int `json:"in_80"`   // measured value inside the 80% band
	In95   int `json:"in_95"`   // inside the 95% band
	NoBand int `json:"no_band"` // figures no pool stood for
}

// Ratio80 and Ratio95 are the shares inside the bands (NaN-free: 0 for
// an empty tally).
func (t Tally) Ratio80() float64 { return ratio(t.In80, t.N) }
func (t Tally) Ratio95() float64 { return ratio(t.In95, t.N) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func (t *Tally) add(in80, in95 bool) {
	t.N++
	if in80 {
		t.In80++
	}
	if in95 {
		t.In95++
	}
}

// Coverage is a leave-one-group-out check of the bands.
type Coverage struct {
	// Metric tallies each headline metric; Regime each feature=value
	// ("loop=closed") over every metric; Outside the figures judged with
	// some feature outside the envelope of the fit that left them out,
	// Inside the others.
	Metric  map[string]*Tally `json:"metric"`
	Regime  map[string]*Tally `json:"regime"`
	Outside Tally             `json:"outside"`
	Inside  Tally             `json:"inside"`
	Groups  int               `json:"groups"`
}

// LeaveGroupOut fits the model once per group on every other group's
// residuals and judges the held-out group's figures with it: the bands a
// new model@GPU would get, checked against what was measured. The fit
// never sees the figures it is checked on.
func LeaveGroupOut(rs []Residual, opt FitOptions) (*Coverage, error) {
	var groups []string
	for i := range rs {
		if !slices.Contains(groups, rs[i].Group) {
			groups = append(groups, rs[i].Group)
		}
	}
	sort.Strings(groups)
	c := &Coverage{Metric: map[string]*Tally{}, Regime: map[string]*Tally{}, Groups: len(groups)}
	tally := func(m map[string]*Tally, k string) *Tally {
		if m[k] == nil {
			m[k] = &Tally{}
		}
		return m[k]
	}
	for _, g := range groups {
		var fit, held []Residual
		for i := range rs {
			if rs[i].Group == g {
				held = append(held, rs[i])
			} else {
				fit = append(fit, rs[i])
			}
		}
		m, err := Fit(fit, opt)
		if err != nil {
			return nil, fmt.Errorf("without %s: %w", g, err)
		}
		for i := range held {
			r := &held[i]
			if !slices.Contains(Headline, r.Metric) || !(r.Predicted > 0) || !(r.Measured > 0) {
				continue
			}
			outside := m.Outside(r.Regime)
			skip := map[string]bool{}
			for _, o := range outside {
				skip[o.Feature] = true
			}
			p := m.Lookup(r.Metric, r.Regime, skip)
			if p == nil {
				tally(c.Metric, r.Metric).NoBand++
				continue
			}
			in := p.Interval(r.Predicted, m.WidenRatio(len(outside)))
			in80 := in.P80[0] <= r.Measured && r.Measured <= in.P80[1]
			in95 := in.P95[0] <= r.Measured && r.Measured <= in.P95[1]
			tally(c.Metric, r.Metric).add(in80, in95)
			for _, f := range Features {
				tally(c.Regime, f+"="+r.Regime.Value(f)).add(in80, in95)
			}
			if len(outside) > 0 {
				c.Outside.add(in80, in95)
			} else {
				c.Inside.add(in80, in95)
			}
		}
	}
	return c, nil
}
