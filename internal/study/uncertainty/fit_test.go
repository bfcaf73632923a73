package uncertainty

import (
	"math"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
)

// synth makes n residuals of metric in group g with log errors es
// (cycled), all in regime r.
func synth(metric, g string, r Regime, n int, es ...float64) []Residual {
	out := make([]Residual, n)
	for i := range out {
		e := es[i%len(es)]
		out[i] = Residual{Family: "f", Case: g, Group: g, Metric: metric, Regime: r, Predicted: 100 * math.Exp(e), Measured: 100}
	}
	return out
}

var (
	closedLight = Regime{Loop: "closed", Load: "light", ModelClass: "dense", Kernels: "measured", GPUFamily: "hopper", Layout: "single",
		Quantisation: "16-bit", PromptBand: "512-2k", OutputBand: "128-512", GPU: "h100-sxm", PromptTokens: 1000, OutputTokens: 200}
	openLight = func() Regime { r := closedLight; r.Loop = "open"; return r }()
)

func TestGroupQuantilesWeighGroupsAlike(t *testing.T) {
	// 99 runs of one group at 0, one run of another at 1: each group
	// weighs half, so the median is between them, not 0.
	xs := make([]float64, 100)
	gs := make([]string, 100)
	for i := range gs {
		gs[i] = "a"
	}
	xs[99], gs[99] = 1, "b"
	q := groupQuantiles(xs, gs, []float64{0.1, 0.5, 0.9})
	if q[0] != 0 || q[2] != 1 || !(q[1] > 0 && q[1] < 1) {
		t.Errorf("quantiles %v: want 0, between 0 and 1, 1", q)
	}
}

func TestLookupFallsBackToCoarserPools(t *testing.T) {
	var rs []Residual
	// Five groups of closed loops, 10% slow; one group of open loops, 50% fast.
	for _, g := range []string{"a", "b", "c", "d", "e"} {
		rs = append(rs, synth("ttft_ms.mean", g, closedLight, 10, 0.1)...)
	}
	rs = append(rs, synth("ttft_ms.mean", "o", openLight, 30, -0.5)...)
	m, err := Fit(rs, DefaultFit)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		metric string
		r      Regime
		skip   map[string]bool
		want   string // pool name, "" for none
	}{
		{"own cell", "ttft_ms.mean", closedLight, nil, "ttft_ms.mean | " + closedLight.where()},
		{"one group only: every regime", "ttft_ms.mean", openLight, nil, "ttft_ms.mean | every regime"},
		{"skipped feature", "ttft_ms.mean", closedLight, map[string]bool{FeatureLoop: true}, "ttft_ms.mean | every regime"},
		{"another statistic: the metric pooled", "ttft_ms.p99", closedLight, nil, "ttft_ms.* | loop=closed, load=light"},
		{"ITL: TPOT's pools", "itl_ms.mean", closedLight, nil, ""},
		{"no such metric", "tpot_ms.mean", closedLight, nil, ""},
	} {
		p := m.Lookup(c.metric, c.r, c.skip)
		got := ""
		if p != nil {
			got = p.Name()
		}
		if got != c.want {
			t.Errorf("%s: pool %q, want %q", c.name, got, c.want)
		}
	}
	// The closed loops' pool: predictions 10% high, so the measured value
	// is the prediction / e^0.1 at every level.
	p := m.Lookup("ttft_ms.mean", closedLight, nil)
	in := p.Interval(110, 1)
	for _, b := range [][2]float64{in.P80, in.P95} {
		for _, x := range b {
			if math.Abs(x-110/math.Exp(0.1)) > 1e-9 {
				t.Errorf("band %v of a prediction 10%% high in every run: want %v", b, 110/math.Exp(0.1))
			}
		}
	}
	if p.Runs != 50 || p.Groups != 5 {
		t.Errorf("pool runs %d groups %d, want 50 and 5", p.Runs, p.Groups)
	}
}

// where is the regime's pool condition as Pool.Name writes it.
func (r Regime) where() string {
	s := ""
	for i, f := range Features {
		if i > 0 {
			s += ", "
		}
		s += f + "=" + r.Value(f)
	}
	return s
}

func TestIntervalWidensAboutTheMedian(t *testing.T) {
	p := &Pool{Metric: "tpot_ms.mean", Runs: 100, Groups: 5, Quantiles: []float64{-0.4, -0.2, 0.1, 0.3, 0.5}}
	x := 50.0
	in := p.Interval(x, 1)
	if in.P80[0] != x*math.Exp(-0.3) || in.P80[1] != x*math.Exp(0.2) || in.P95[0] != x*math.Exp(-0.5) || in.P95[1] != x*math.Exp(0.4) {
		t.Errorf("band %+v of %v with quantiles %v", in, x, p.Quantiles)
	}
	w := p.Interval(x, 2)
	// In log(measured / predicted) the median is −0.1 and the 80% band
	// −0.3 to 0.2: its spread about the median doubled is −0.5 to 0.5.
	want := [2]float64{x * math.Exp(-0.5), x * math.Exp(0.5)}
	if math.Abs(w.P80[0]-want[0]) > 1e-9 || math.Abs(w.P80[1]-want[1]) > 1e-9 {
		t.Errorf("widened ×2: %v, want %v", w.P80, want)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if p.Interval(bad, 1) != nil {
			t.Errorf("a band for the value %v", bad)
		}
	}
}

func TestOutsideNamesWhatNoRunCovered(t *testing.T) {
	m, err := Fit(synth("ttft_ms.mean", "a", closedLight, 30, 0), DefaultFit)
	if err != nil {
		t.Fatal(err)
	}
	if o := m.Outside(closedLight); len(o) != 0 {
		t.Errorf("the fitted regime itself is outside: %+v", o)
	}
	r := closedLight
	r.ModelClass, r.GPU, r.Kernels, r.PromptTokens = "mla", "a100-80gb", "template", 5000
	got := map[string]bool{}
	for _, o := range m.Outside(r) {
		got[o.Feature] = true
		if o.Reason == "" || o.Value == "" {
			t.Errorf("%+v: no value or reason", o)
		}
	}
	for _, f := range []string{FeatureModelClass, FeatureKernels, "gpu", "prompt_tokens"} {
		if !got[f] {
			t.Errorf("%s is not outside: %v", f, got)
		}
	}
	if len(got) != 4 || m.WidenRatio(4) != 3 {
		t.Errorf("outside %v, widen ratio %v: want 4 features, 3", got, m.WidenRatio(4))
	}
}

func TestFitRefusesNoHeadlineResidual(t *testing.T) {
	if _, err := Fit(synth("queue_ms.mean", "a", closedLight, 30, 0), DefaultFit); err == nil {
		t.Error("a model fitted on no headline metric")
	}
}

// FuzzParse: any bytes give a model or an error, never a panic, and a
// parsed model's lookups and bands hold.
func FuzzParse(f *testing.F) {
	f.Add(catalogs.ErrorModel())
	f.Add([]byte(`{"version": 1, "min_runs": 1, "min_groups": 1, "widen_per_outside": 0.5, "pools": [{"metric": "ttft_ms.mean", "quantiles": [0, 0, 0, 0, 0]}]}`))
	f.Add([]byte(`{"version": 1, "min_runs": 1, "min_groups": 1, "pools": [{"metric": "ttft_ms.mean", "quantiles": [1, 0]}]}`))
	f.Add([]byte(`{"version": 2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			return
		}
		for _, metric := range Headline {
			if p := m.Lookup(metric, closedLight, nil); p != nil {
				if in := p.Interval(100, m.WidenRatio(1)); in != nil && !(in.P95[0] <= in.P80[0] && in.P80[0] <= in.P80[1] && in.P80[1] <= in.P95[1]) {
					t.Errorf("%s: band %+v out of order", metric, in)
				}
			}
		}
		_ = m.Outside(openLight)
	})
}

func TestUpperIsTheBandsUpperEnd(t *testing.T) {
	m, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	cfg, rep := judged(t, `
model: llama-3.1-8b
gpu: h100-sxm
workload: {requests: 40, arrival: {rate_rps: 2}, input_tokens: {type: fixed, value: 1000}, output_tokens: {type: fixed, value: 200}}
`)
	x := rep.TTFTMS.P99
	in := rep.TTFTMSInterval.P99
	for _, c := range []struct {
		conf, want float64
	}{{0.9, in.P80[1]}, {0.975, in.P95[1]}} {
		got, ok := m.Upper(cfg, rep, "ttft_ms.p99", x, c.conf)
		if !ok || math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("upper at %v: %v (%v), want the band's upper end %v", c.conf, got, ok, c.want)
		}
	}
	lo, _ := m.Upper(cfg, rep, "ttft_ms.p99", x, 0.5)
	mid, _ := m.Upper(cfg, rep, "ttft_ms.p99", x, 0.7)
	hi, _ := m.Upper(cfg, rep, "ttft_ms.p99", x, 0.9)
	if !(lo <= mid && mid <= hi) {
		t.Errorf("upper ends %v, %v, %v at 0.5, 0.7, 0.9 confidence are not in order", lo, mid, hi)
	}
	for _, bad := range []float64{0.4, 0.99, math.NaN()} {
		if _, ok := m.Upper(cfg, rep, "ttft_ms.p99", x, bad); ok {
			t.Errorf("an upper end at confidence %v", bad)
		}
	}
	if _, ok := m.Upper(cfg, rep, "ttft_ms.p999", x, 0.9); ok {
		t.Error("an upper end for ttft_ms.p999, which no pool stands for")
	}
}
