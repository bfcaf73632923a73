package uncertainty

import (
	"math"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

// Judge sets rep's intervals and its Uncertainty from the model: the
// regime of cfg's run as rep shows it, what of it is outside the
// envelope, and each headline figure's band (none where no pool stands
// for it). rep must be cfg's report.
func (m *Model) Judge(cfg *sim.Config, rep *sim.Report) {
	j := m.judging(cfg, rep)
	u := &sim.Uncertainty{Regime: map[string]string{}, Outside: j.outside, WidenRatio: j.widen, ErrorModel: m.Source}
	for _, f := range Features {
		u.Regime[f] = j.regime.Value(f)
	}
	rep.Uncertainty = u
	fresh := map[string]*sim.SummaryInterval{}
	for _, metric := range Headline {
		p := m.Lookup(metric, j.regime, j.skip)
		if p == nil {
			continue
		}
		base, q, _ := strings.Cut(metric, ".")
		if base == "throughput" {
			if in := p.Interval(rep.Throughput.RequestsPerS, j.widen); in != nil {
				rep.ThroughputInterval = &sim.ThroughputInterval{RequestsPerS: in}
			}
			continue
		}
		dst, s := latency(rep, base)
		x, _ := s.At(q)
		if in := p.Interval(x, j.widen); in != nil {
			if fresh[base] == nil {
				fresh[base] = &sim.SummaryInterval{}
			}
			if fresh[base].Set(q, in) {
				*dst = fresh[base]
			}
		}
	}
}

// judging is what Judge and Upper read of a run before a pool: its
// regime, the features outside the envelope (skipped in the lookup) and
// how much they widen the bands.
type judging struct {
	regime  Regime
	outside []sim.OutsideFeature
	skip    map[string]bool
	widen   float64
}

func (m *Model) judging(cfg *sim.Config, rep *sim.Report) judging {
	j := judging{regime: RegimeOf(cfg, rep), skip: map[string]bool{}}
	j.outside = m.Outside(j.regime)
	for _, o := range j.outside {
		j.skip[o.Feature] = true
	}
	j.widen = m.WidenRatio(len(j.outside))
	return j
}

// latency is rep's band and summary of a latency metric ("ttft_ms");
// nil for another name.
func latency(rep *sim.Report, metric string) (**sim.SummaryInterval, stats.Summary) {
	switch metric {
	case "ttft_ms":
		return &rep.TTFTMSInterval, rep.TTFTMS
	case "tpot_ms":
		return &rep.TPOTMSInterval, rep.TPOTMS
	case "itl_ms":
		return &rep.ITLMSInterval, rep.ITLMS
	case "e2e_ms":
		return &rep.E2EMSInterval, rep.E2EMS
	}
	return nil, stats.Summary{}
}

// Band is the interval Judge gave rep's figure of a latency metric
// ("ttft_ms") at statistic q ("p99"), nil when it gave none.
func Band(rep *sim.Report, metric, q string) *sim.Interval {
	dst, _ := latency(rep, metric)
	if dst == nil {
		return nil
	}
	return (*dst).At(q)
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
	j := m.judging(cfg, rep)
	p := m.Lookup(metric, j.regime, j.skip)
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
	return x * math.Exp(-(med + j.widen*(e-med))), true
}
