package uncertainty

import (
	"math"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/sim"
)

// Judge sets rep's intervals and its Uncertainty from the model: the
// regime of cfg's run as rep shows it, what of it is outside the
// envelope, and each headline figure's band (none where no pool stands
// for it). rep must be cfg's report.
func (m *Model) Judge(cfg *sim.Config, rep *sim.Report) {
	r := RegimeOf(cfg, rep)
	outside := m.Outside(r)
	skip := map[string]bool{}
	for _, o := range outside {
		skip[o.Feature] = true
	}
	widen := m.WidenRatio(len(outside))
	u := &sim.Uncertainty{Regime: map[string]string{}, Outside: outside, WidenRatio: widen, ErrorModel: m.Source}
	for _, f := range Features {
		u.Regime[f] = r.Value(f)
	}
	rep.Uncertainty = u
	sums := map[string]struct {
		s   *sim.SummaryInterval
		dst **sim.SummaryInterval
		get func(string) (float64, bool)
	}{
		"ttft_ms": {&sim.SummaryInterval{}, &rep.TTFTMSInterval, rep.TTFTMS.At},
		"tpot_ms": {&sim.SummaryInterval{}, &rep.TPOTMSInterval, rep.TPOTMS.At},
		"itl_ms":  {&sim.SummaryInterval{}, &rep.ITLMSInterval, rep.ITLMS.At},
		"e2e_ms":  {&sim.SummaryInterval{}, &rep.E2EMSInterval, rep.E2EMS.At},
	}
	for _, metric := range Headline {
		p := m.Lookup(metric, r, skip)
		if p == nil {
			continue
		}
		base, q, _ := strings.Cut(metric, ".")
		if base == "throughput" {
			if in := p.Interval(rep.Throughput.RequestsPerS, widen); in != nil {
				rep.ThroughputInterval = &sim.ThroughputInterval{RequestsPerS: in}
			}
			continue
		}
		s := sums[base]
		x, _ := s.get(q)
		if in := p.Interval(x, widen); in != nil && s.s.Set(q, in) {
			*s.dst = s.s
		}
	}
}

// Interval is the band of a predicted value x: where the measured value
// falls given the pool's errors, log(x / measured), their spread about
// the median multiplied by widen. Nil for a value that is not positive.
func (p *Pool) Interval(x, widen float64) *sim.Interval {
	if !(x > 0) || math.IsInf(x, 0) {
		return nil
	}
	q := p.Quantiles
	at := func(i int) float64 { return x * math.Exp(-(q[2] + widen*(q[i]-q[2]))) }
	return &sim.Interval{P80: [2]float64{at(3), at(1)}, P95: [2]float64{at(4), at(0)}, Runs: p.Runs, Pool: p.Name()}
}

// Upper is the value a benchmark's measurement of metric ("ttft_ms.p99")
// stays at or below with probability c, for a prediction x in cfg's run
// as rep reports it: the metric's pool (as Judge finds it) at its error
// quantile 1 − c, interpolated between Levels and widened for what of
// the run is outside the envelope. ok is false when no pool stands for
// the metric, it is not a Headline metric, x is not positive, or c is
// outside [0.5, 0.975] (the levels a pool holds).
func (m *Model) Upper(cfg *sim.Config, rep *sim.Report, metric string, x, c float64) (upper float64, ok bool) {
	if !(c >= 0.5 && c <= Levels[len(Levels)-1]) || !(x > 0) || math.IsInf(x, 0) || !slices.Contains(Headline, metric) {
		return 0, false
	}
	r := RegimeOf(cfg, rep)
	outside := m.Outside(r)
	skip := map[string]bool{}
	for _, o := range outside {
		skip[o.Feature] = true
	}
	p := m.Lookup(metric, r, skip)
	if p == nil {
		return 0, false
	}
	// The error at probability 1 − c, between the levels around it.
	want, q := 1-c, p.Quantiles
	e := q[0]
	for i := 1; i < len(Levels); i++ {
		if want <= Levels[i] {
			t := (want - Levels[i-1]) / (Levels[i] - Levels[i-1])
			e = q[i-1] + t*(q[i]-q[i-1])
			break
		}
	}
	med := q[2]
	return x * math.Exp(-(med + m.WidenRatio(len(outside))*(e-med))), true
}
