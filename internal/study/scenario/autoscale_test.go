package scenario_test

import (
	"errors"
	"math"
	"testing"

	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// TestColdStartMatchesLoggedStarts: given each logged start's weight
// load time, the cold-start model (start-up, load, torch.compile and
// CUDA-graph capture defaults) comes within 15% of the time vLLM 0.11
// took from starting its API server to serving, in the four logs of
// ../shared/data/measured/inference-sim-eval-ground-truth (an 80 GB GPU).
func TestColdStartMatchesLoggedStarts(t *testing.T) {
	cat := builtin(t)
	for _, c := range []struct {
		run              string
		model            string
		maxNumSeqs       int
		loadS, measuredS float64 // "Loading weights took"; API server start to "Starting vLLM API server"
	}{
		{"jan20-codellama-prefill-1", "codellama-34b", 32, 59.08, 99.74},
		{"jan20-codellama-train-1", "codellama-34b", 256, 28.09, 77.14},
		{"jan20-prefill-llama7b-tp1-1", "codellama-34b", 256, 57.66, 105.08},
		{"jan21-llama7b-train-1", "llama-2-7b", 256, 12.15, 49.84},
	} {
		t.Run(c.run, func(t *testing.T) {
			s := scenario.Default()
			s.Model, s.GPU = c.model, "h100-sxm"
			s.Engine.MaxModelLen, s.Engine.MaxNumSeqs = 4096, c.maxNumSeqs
			s.Autoscale = &scenario.AutoscaleSpec{MaxReplicas: 2, Target: 1}
			res, err := s.Resolve(scenario.Env{Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			gb := res.ColdStart.WeightsGB
			s.Autoscale.ColdStart.WeightsLoadGBps = gb / c.loadS
			res, err = s.Resolve(scenario.Env{Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			got := res.ColdStart.ScaleUpDelayS
			if math.Abs(got-c.measuredS)/c.measuredS > 0.15 {
				t.Errorf("cold start %.1f s (%+v), the log took %.1f s", got, *res.ColdStart, c.measuredS)
			}
			if res.Config.Autoscale.ScaleUpDelayS != got {
				t.Errorf("the simulator's delay %g differs from the cold start %g", res.Config.Autoscale.ScaleUpDelayS, got)
			}
		})
	}
}

// TestColdStartParts: Llama-3.1-8B (16.09 GB of bf16 weights as vLLM
// loads them, 14.99 GiB; 32 layers) on one H100, where vLLM captures 67
// batch sizes (1, 2, 4, 8 … 512): 30 s provisioning + 20 s start-up +
// 16.09 / 1.16 = 13.87 s of weights + 21 s torch.compile + 67 × 32 × 1.9 ms
// = 4.07 s of graphs = 88.95 s. TP2 halves each GPU's weights but reads
// about as many bytes; scale_up_delay_s overrides the sum.
func TestColdStartParts(t *testing.T) {
	cat := builtin(t)
	s, err := decode(t, head+"replicas: 2\nautoscale: {max_replicas: 4, target: 5, cold_start: {provision_s: 30}}\n")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	cs := res.ColdStart
	if cs.CUDAGraphSizes != 67 || math.Abs(cs.WeightsGB-16.09) > 0.01 || math.Abs(cs.ScaleUpDelayS-88.95) > 0.01 {
		t.Errorf("cold start %+v, want 67 sizes, 16.09 GB, 88.95 s", *cs)
	}
	p := res.Config.Autoscale
	want := sim.Autoscale{MinReplicas: 1, MaxReplicas: 4, Metric: sim.ScaleOnRequestRate, Target: 5, IntervalS: 15,
		ScaleUpDelayS: cs.ScaleUpDelayS, ScaleDownStabilizationS: 300, Tolerance: 0.1}
	if *p != want {
		t.Errorf("policy %+v, want %+v", *p, want)
	}
	s.TP = 2
	if res, err = s.Resolve(scenario.Env{Catalog: cat}); err != nil || math.Abs(res.ColdStart.WeightsGB-16.09) > 0.05 {
		t.Errorf("TP2 reads %+v (%v)", res.ColdStart, err)
	}
	d := 7.5
	s.Autoscale.ScaleUpDelayS = &d
	if res, err = s.Resolve(scenario.Env{Catalog: cat}); err != nil || res.Config.Autoscale.ScaleUpDelayS != 7.5 {
		t.Errorf("scale_up_delay_s 7.5 gave %+v (%v)", res.Config.Autoscale, err)
	}
}

// TestAutoscaleAndProfileFieldErrors names the field at fault.
func TestAutoscaleAndProfileFieldErrors(t *testing.T) {
	cat := builtin(t)
	for _, c := range []struct{ doc, field string }{
		{"autoscale: {metric: cpu}\n", "autoscale.metric"},
		{"autoscale: {max_replicas: 2, min_replicas: 3}\n", "autoscale.max_replicas"},
		{"replicas: 5\nautoscale: {max_replicas: 2}\n", "replicas"},
		{"autoscale: {target: -1}\n", "autoscale.target"},
		{"autoscale: {metric: kv_cache_usage, target: 2}\n", "autoscale.target"},
		{"autoscale: {tolerance: 1.5}\n", "autoscale.tolerance"},
		{"autoscale: {interval_s: 0.0001}\n", "autoscale.interval_s"},
		{"autoscale: {cold_start: {weights_load_gbps: -1}}\n", "autoscale.cold_start.weights_load_gbps"},
		{"autoscale: {cold_start: {torch_compile_s: -2}}\n", "autoscale.cold_start.torch_compile_s"},
		{"autoscale: {scale_up_delay_s: 1e300}\n", "autoscale.scale_up_delay_s"},
		{"autoscale: {cold_start: {nope: 1}}\n", "autoscale.cold_start.nope"},
		{"workload: {rate_profile: [{at_s: 5, rate_rps: 1}, {at_s: 10, rate_rps: 2}]}\n", "workload.rate_profile[0].at_s"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: 1}, {at_s: 0, rate_rps: 2}]}\n", "workload.rate_profile[1].at_s"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: -1}, {at_s: 10, rate_rps: 2}]}\n", "workload.rate_profile[0].rate_rps"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: 0}, {at_s: 10, rate_rps: 0}]}\n", "workload.rate_profile"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: 1}]}\n", "workload.rate_profile"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: 1}, {at_s: 10, rate_rps: 2}], rate_profile_end_s: 10}\n", "workload.rate_profile_end_s"},
		{"workload: {rate_profile_end_s: 10, requests: 5, arrival: {rate_rps: 1}}\n", "workload.rate_profile_end_s"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: 1}, {at_s: 10, rate_rps: 2}], arrival: {rate_rps: 3}}\n", "workload.arrival.rate_rps"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: 1}, {at_s: 10, rate_rps: 2}], arrival: {type: closed_loop}}\n", "workload.arrival.type"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: 1}, {at_s: 10, rate_rps: 2}], arrival: {type: gamma}}\n", "workload.arrival.cv"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: 1}, {at_s: 10, rate_rps: 2}], stages: [{duration_s: 1, rate_rps: 1}]}\n", "workload.rate_profile"},
		{"workload: {rate_profile: [{at_s: 0, rate_rps: 1}, {at_s: 900000, rate_rps: 2}]}\n", "workload.rate_profile"},
	} {
		_, err := decode(t, head+c.doc)
		var de *scenario.DecodeError
		if !errors.As(err, &de) || de.Field != c.field {
			t.Errorf("%q: got %v, want an error on %s", c.doc, err, c.field)
		}
	}
	// What only resolving can tell: a policy without its size or target.
	for _, c := range []struct{ doc, field string }{
		{"autoscale: {target: 3}\n", "autoscale.max_replicas"},
		{"autoscale: {max_replicas: 3}\n", "autoscale.target"},
	} {
		s, err := decode(t, head+c.doc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Resolve(scenario.Env{Catalog: cat})
		var fe *scenario.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%q: got %v, want an error on %s", c.doc, err, c.field)
		}
	}
}

// TestRateProfileStages: a profile runs as one open-loop stage per point,
// the last one as long as the step before it unless the end is given, a
// rate of 0 an idle stage.
func TestRateProfileStages(t *testing.T) {
	cat := builtin(t)
	s, err := decode(t, head+"workload: {rate_profile: [{at_s: 0, rate_rps: 2}, {at_s: 60, rate_rps: 0}, {at_s: 90, rate_rps: 5}]}\n")
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload.Requests != 0 || s.Workload.ProfileEndS() != 120 || s.Workload.PeakRateRPS() != 5 {
		t.Fatalf("requests %d, end %g, peak %g", s.Workload.Requests, s.Workload.ProfileEndS(), s.Workload.PeakRateRPS())
	}
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	st := res.Config.Workload.Stages
	if len(st) != 3 || st[0].DurationS != 60 || st[1].DurationS != 30 || st[1].RateRPS != 0 || st[2].DurationS != 30 || st[2].RateRPS != 5 {
		t.Errorf("stages %+v", st)
	}
	if n := s.EstimatedRequests(res.Config.Workload); n != 270 {
		t.Errorf("estimated %d requests, want 2×60 + 5×30 = 270", n)
	}
	s.Workload.RateProfileEndS = 100
	if w := s.Workload.LoadStages(4); len(w) != 15+8+3 || w[len(w)-1].DurationS != 2 {
		t.Errorf("windows of 4 s: %d stages, last %+v", len(w), w[len(w)-1])
	}
}
