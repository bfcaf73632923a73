package sim

// The error band of a report's headline figures. The simulator does not
// fill it: its callers (headroom simulate, the API) apply the error model
// fitted to the validation runs' residuals (internal/study/uncertainty) to
// a finished report. A report without them (sim.Run's own) has none.

// Interval is the range a benchmark's measurement of a figure falls in,
// at 80% and at 95%, judged from how far the simulator's predictions were
// from measurements in the validation runs of the same regime. Its bounds
// are in the figure's unit; a biased pool gives a band that need not hold
// the point value.
type Interval struct {
	// P80 is [low, high]: 80% of measurements in the regime fell
	// between them (10% below, 10% above).
	P80 [2]float64 `json:"p80"`
	// P95 is [low, high] holding 95% (2.5% below, 2.5% above).
	P95 [2]float64 `json:"p95"`
	// Runs are the validation runs whose residuals make the band, and
	// Pool says which: the metric and the regime features they share
	// ("ttft_ms.mean | loop=closed, load=light"), coarser than the
	// scenario's own regime where too few runs match it.
	Runs int    `json:"runs"`
	Pool string `json:"pool"`
}

// SummaryInterval holds the intervals of a latency summary's statistics
// (those the validation runs measured).
type SummaryInterval struct {
	Mean *Interval `json:"mean,omitempty"`
	P50  *Interval `json:"p50,omitempty"`
	P90  *Interval `json:"p90,omitempty"`
	P95  *Interval `json:"p95,omitempty"`
	P99  *Interval `json:"p99,omitempty"`
}

// slot is the field of statistic q ("mean", "p99"), nil for a statistic
// the summary has no interval for.
func (s *SummaryInterval) slot(q string) **Interval {
	switch q {
	case "mean":
		return &s.Mean
	case "p50":
		return &s.P50
	case "p90":
		return &s.P90
	case "p95":
		return &s.P95
	case "p99":
		return &s.P99
	}
	return nil
}

// At is the interval of statistic q ("mean", "p99"), nil when there is
// none.
func (s *SummaryInterval) At(q string) *Interval {
	if s == nil {
		return nil
	}
	if p := s.slot(q); p != nil {
		return *p
	}
	return nil
}

// Set sets the interval of statistic q, reporting whether the summary
// has one for q.
func (s *SummaryInterval) Set(q string, in *Interval) bool {
	p := s.slot(q)
	if p == nil {
		return false
	}
	*p = in
	return true
}

// ThroughputInterval holds the interval of the request throughput (the
// one throughput the validation runs measured).
type ThroughputInterval struct {
	RequestsPerS *Interval `json:"requests_per_s,omitempty"`
}

// Uncertainty says how a report's intervals were judged.
type Uncertainty struct {
	// Regime is the run's value of every feature the error model pools
	// residuals by (model_class, gpu_family, kernels, layout,
	// quantisation, loop, load, prompt_band, output_band).
	Regime map[string]string `json:"regime"`
	// Outside lists what of the scenario no validation run covered; each
	// widens the bands.
	Outside []OutsideFeature `json:"outside,omitempty"`
	// WidenRatio is what the bands' spread (in log space, about their
	// median) was multiplied by for the features outside: 1 inside.
	WidenRatio float64 `json:"widen_ratio"`
	// ErrorModel says what the error model was fitted on and how it was
	// checked.
	ErrorModel string `json:"error_model"`
}

// OutsideFeature is one feature of a scenario outside the validation
// runs: its value and why it is outside.
type OutsideFeature struct {
	Feature string `json:"feature"`
	Value   string `json:"value"`
	Reason  string `json:"reason"`
}
