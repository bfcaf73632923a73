package plan

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/workload"
)

// TestPlanConfidence: at 90% confidence every bound is checked at the
// upper end of its band, which for the open loops' TTFT p99 is far above
// the point value: one H100 meets TTFT p99 500 ms at 10 req/s on the
// point value, not at 90%, and the plan takes more replicas and says at
// which confidence its answer holds.
func TestPlanConfidence(t *testing.T) {
	s := small(200)
	s.Workload.Arrival.RateRPS = 10
	s.SLA = &sim.SLA{TTFTMS: map[string]float64{"p99": 500}, TPOTMS: map[string]float64{"p99": 30}}
	spec := PlanSpec{Scenario: s, GPUs: []string{"h100-sxm"}, TPs: []int{1}, SkipHeadroom: true}
	r := runner(t)
	point, err := r.Plan(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec.Confidence = 0.9
	conf, err := r.Plan(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, c := point.Recommendation, conf.Recommendation
	if p == nil || c == nil {
		t.Fatalf("recommendations %+v, %+v", p, c)
	}
	if c.Replicas <= p.Replicas {
		t.Errorf("%d replicas at 90%% confidence, %d on the point values: want more", c.Replicas, p.Replicas)
	}
	if c.Confidence != 0.9 || !strings.Contains(c.Sentence, "at 90% confidence") || strings.Contains(p.Sentence, "confidence") || p.Confidence != 0 {
		t.Errorf("sentences %q / %q, confidence %v / %v", p.Sentence, c.Sentence, p.Confidence, c.Confidence)
	}
	// The candidates' checks are the bands' upper ends, above the point
	// values for TTFT p99, and inside the 95% band of TTFT p99 the
	// candidate carries.
	for _, cand := range conf.Candidates {
		in := cand.TTFTP99MSInterval
		if in == nil || cand.TPOTP99MSInterval == nil || cand.E2EP99MSInterval == nil || cand.ThroughputRPSInterval == nil {
			t.Fatalf("%+v: bands %+v %+v %+v %+v", cand.Config, in, cand.TPOTP99MSInterval, cand.E2EP99MSInterval, cand.ThroughputRPSInterval)
		}
		for _, ch := range cand.Checks {
			if ch.Metric == "ttft_ms" && ch.Quantile == "p99" && !(ch.ValueMS > cand.TTFTP99MS && ch.ValueMS >= in.P80[1] && ch.ValueMS <= in.P95[1]) {
				t.Errorf("%+v: TTFT p99 check %v ms at 90%%, point %v ms, band %+v", cand.Config, ch.ValueMS, cand.TTFTP99MS, in)
			}
		}
	}
	// On the point values too: every candidate has its bands.
	for _, cand := range point.Candidates {
		if cand.TTFTP99MSInterval == nil || !(cand.TTFTP99MSInterval.P80[0] < cand.TTFTP99MSInterval.P80[1]) {
			t.Errorf("%+v: TTFT p99 band %+v", cand.Config, cand.TTFTP99MSInterval)
		}
	}
}

func TestPlanConfidenceRefused(t *testing.T) {
	r := runner(t)
	for _, c := range []struct {
		name string
		spec PlanSpec
	}{
		{"below the median", PlanSpec{Scenario: small(20), Confidence: 0.4}},
		{"past the 97.5% level", PlanSpec{Scenario: small(20), Confidence: 0.99}},
		{"with a rate profile", PlanSpec{Scenario: func() scenario.Scenario {
			s := small(20)
			s.Workload.Arrival = workload.ArrivalSpec{}
			s.Workload.RateProfile = []workload.RatePoint{{AtS: 0, RateRPS: 1}, {AtS: 600, RateRPS: 2}}
			s.Workload.RateProfileEndS = 1200
			return s
		}(), GPUs: []string{"h100-sxm"}, TPs: []int{1}, Confidence: 0.9}},
	} {
		_, err := r.Plan(context.Background(), c.spec, nil)
		var fe *scenario.FieldError
		if !errors.As(err, &fe) || fe.Field != "confidence" {
			t.Errorf("%s: err %v, want a FieldError naming confidence", c.name, err)
		}
	}
}
