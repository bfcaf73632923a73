package uncertainty

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
)

// judged simulates a scenario and judges its report with the shipped model.
func judged(t *testing.T, doc string) (*sim.Config, *sim.Report) {
	t.Helper()
	sc, err := scenario.Decode(strings.NewReader(doc), "scenario")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	res, err := sc.Resolve(scenario.Env{Catalog: cat, KernelDB: kernels(cat).Load})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), res.Config)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m.Judge(&res.Config, rep)
	return &res.Config, rep
}

// checkBands: every band holds positive bounds in order, the 95% one
// around the 80% one, drawn from a named pool of runs; the headline
// means and p99s all have one.
func checkBands(t *testing.T, rep *sim.Report) {
	t.Helper()
	for name, s := range map[string]*sim.SummaryInterval{"ttft_ms": rep.TTFTMSInterval, "tpot_ms": rep.TPOTMSInterval,
		"itl_ms": rep.ITLMSInterval, "e2e_ms": rep.E2EMSInterval} {
		for _, q := range []string{"mean", "p50", "p90", "p95", "p99"} {
			in := s.At(q)
			if in == nil {
				t.Errorf("%s.%s has no band", name, q)
				continue
			}
			if !(in.P95[0] > 0 && in.P95[0] <= in.P80[0] && in.P80[0] < in.P80[1] && in.P80[1] <= in.P95[1]) || in.Runs <= 0 || in.Pool == "" {
				t.Errorf("%s.%s: band %+v", name, q, in)
			}
		}
	}
	u := rep.Uncertainty
	if u == nil || len(u.Regime) != len(Features) || u.ErrorModel == "" {
		t.Fatalf("uncertainty %+v", u)
	}
}

func TestJudgeInsideTheEnvelope(t *testing.T) {
	_, rep := judged(t, `
model: llama-3.1-8b
gpu: h100-sxm
workload:
  requests: 60
  arrival: {rate_rps: 4}
  input_tokens: {type: fixed, value: 1000}
  output_tokens: {type: fixed, value: 200}
`)
	checkBands(t, rep)
	u := rep.Uncertainty
	if len(u.Outside) != 0 || u.WidenRatio != 1 {
		t.Errorf("a measured GPU, dense model, open loop: outside %+v, widen %v", u.Outside, u.WidenRatio)
	}
	want := map[string]string{FeatureLoop: "open", FeatureLoad: "light", FeatureModelClass: "dense", FeatureKernels: "measured",
		FeatureGPUFamily: "hopper", FeatureLayout: "single", FeatureQuantisation: "16-bit", FeaturePromptBand: "512-2k", FeatureOutputBand: "128-512"}
	for f, v := range want {
		if u.Regime[f] != v {
			t.Errorf("regime %s %q, want %q", f, u.Regime[f], v)
		}
	}
}

func TestJudgeWidensOutsideTheEnvelope(t *testing.T) {
	m, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, doc string
		outside   []string
	}{
		{"a GPU no run used", `
model: llama-3.1-8b
gpu: a100-80gb
workload: {requests: 40, arrival: {rate_rps: 2}, input_tokens: {type: fixed, value: 1000}, output_tokens: {type: fixed, value: 200}}
`, []string{"gpu"}},
		{"a model class never measured", `
model: deepseek-v3
gpu: h200
tp: 8
workload: {requests: 16, arrival: {rate_rps: 1}, input_tokens: {type: fixed, value: 1000}, output_tokens: {type: fixed, value: 64}}
`, []string{FeatureModelClass}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, rep := judged(t, c.doc)
			checkBands(t, rep)
			u := rep.Uncertainty
			var got []string
			for _, o := range u.Outside {
				got = append(got, o.Feature)
			}
			for _, f := range c.outside {
				if !strings.Contains(strings.Join(got, ","), f) {
					t.Errorf("outside %v, want %s among them", got, f)
				}
			}
			if u.WidenRatio != m.WidenRatio(len(u.Outside)) || u.WidenRatio <= 1 {
				t.Errorf("widen ratio %v for %d features outside", u.WidenRatio, len(u.Outside))
			}
			// The band is its pool's, spread by the ratio.
			r := RegimeOf(cfg, rep)
			skip := map[string]bool{}
			for _, o := range u.Outside {
				skip[o.Feature] = true
			}
			p := m.Lookup("tpot_ms.mean", r, skip)
			plain := p.Interval(rep.TPOTMS.Mean, 1)
			wide := rep.TPOTMSInterval.Mean
			spread := func(in *sim.Interval) float64 { return math.Log(in.P80[1] / in.P80[0]) }
			if got := spread(wide) / spread(plain); math.Abs(got-u.WidenRatio) > 1e-9 {
				t.Errorf("TPOT mean band %v is %v× as wide as its pool's %v, want %v×", wide.P80, got, plain.P80, u.WidenRatio)
			}
		})
	}
}
