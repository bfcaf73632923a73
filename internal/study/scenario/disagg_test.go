package scenario_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/memory"
)

// heterogeneous is H100 prefill (2 replicas, prefix caching off, a larger
// token budget) in front of H200 decode (3 replicas, least_kv) over the
// default link.
const heterogeneous = head + `engine:
  max_num_seqs: 128
disaggregation:
  prefill:
    replicas: 2
    engine: {max_num_batched_tokens: 16384, enable_prefix_caching: false}
  decode:
    gpu: h200
    replicas: 3
    router: least_kv
`

func TestDisaggregationPoolsInheritAndOverride(t *testing.T) {
	cat := builtin(t)
	s, err := decode(t, heterogeneous)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("llama-3.1-8b")
	h100, _ := cat.GPU("h100-sxm")
	h200, _ := cat.GPU("h200")
	base := engine.Defaults()
	base.MaxNumSeqs = 128
	wantDec, _ := base.Resolve(m, h200)
	pre := base
	pre.MaxNumBatchedTokens, pre.EnablePrefixCaching = 16384, false
	wantPre, _ := pre.Resolve(m, h100)

	c := res.Config
	d := c.Disagg
	if d == nil {
		t.Fatal("no disaggregation in the resolved config")
	}
	// The top-level config is the decode pool.
	if c.GPU != h200 || c.Replicas != 3 || c.TP != 1 || c.Router != sim.RouterLeastKV || c.Engine != wantDec {
		t.Errorf("decode pool: %s ×%d tp %d %s, engine %+v; want h200 ×3 tp 1 least_kv, %+v", c.GPU.ID, c.Replicas, c.TP, c.Router, c.Engine, wantDec)
	}
	p := d.Prefill
	if p.GPU != h100 || p.Replicas != 2 || p.TP != 1 || p.Router != sim.RouterRoundRobin || p.Engine != wantPre {
		t.Errorf("prefill pool: %s ×%d tp %d %s, engine %+v; want h100-sxm ×2 tp 1 round_robin, %+v", p.GPU.ID, p.Replicas, p.TP, p.Router, p.Engine, wantPre)
	}
	for _, x := range []struct {
		gpu    string
		eng    engine.Config
		blocks int
		bytes  float64
	}{{"h100-sxm", wantPre, p.NumGPUBlocks, p.BlockBytes}, {"h200", wantDec, c.NumGPUBlocks, c.BlockBytes}} {
		g, _ := cat.GPU(x.gpu)
		mp, err := memory.Compute(memory.Setup{Model: m, GPU: g, Precision: m.ResolvePrecision("", ""), TP: 1, EP: 1, Engine: x.eng})
		if err != nil {
			t.Fatal(err)
		}
		if x.blocks != mp.NumGPUBlocks || x.bytes != mp.BlockBytes {
			t.Errorf("%s pool: %d blocks of %g bytes, want the memory model's %d of %g", x.gpu, x.blocks, x.bytes, mp.NumGPUBlocks, mp.BlockBytes)
		}
	}
	if res.Disaggregation.PrefillMemory.NumGPUBlocks != p.NumGPUBlocks || res.Memory.NumGPUBlocks != c.NumGPUBlocks {
		t.Error("resolved memory profiles do not match the pools")
	}
	// The default link: InfiniBand NDR at its measured 68% of 50 GB/s.
	if d.Link.Name != "infiniband-ndr" || d.Link.BandwidthGBps != 34 || d.Link.LatencyUS != 17 || d.Layerwise {
		t.Errorf("link %+v layerwise %v, want infiniband-ndr 34 GB/s 17 µs, read after the prefill", d.Link, d.Layerwise)
	}
}

func TestDisaggregationLinkOverrides(t *testing.T) {
	s, err := decode(t, heterogeneous+"  kv_transfer: {link: roce-200, bandwidth_gbps: 12.5, latency_us: 0, overlap: layerwise}\n")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Resolve(scenario.Env{Catalog: builtin(t)})
	if err != nil {
		t.Fatal(err)
	}
	if l := res.Config.Disagg.Link; l.Name != "roce-200" || l.BandwidthGBps != 12.5 || l.LatencyUS != 0 || !res.Config.Disagg.Layerwise {
		t.Errorf("link %+v, want roce-200 at 12.5 GB/s, 0 µs, layer-wise", l)
	}
}

func TestDisaggregationErrorsNameTheirField(t *testing.T) {
	cat := builtin(t)
	for _, c := range []struct {
		name, doc, field, inMsg string
		is                      error
	}{
		{"pool tp does not divide the heads", head + "disaggregation:\n  decode: {tp: 3}\n", "disaggregation.decode.tp", "does not divide", nil},
		{"pool engine setting", head + "disaggregation:\n  prefill:\n    engine: {gpu_memory_utilization: 1.5}\n", "disaggregation.prefill.engine.gpu_memory_utilization", "not in (0, 1]", nil},
		{"unknown pool gpu", head + "disaggregation:\n  prefill: {gpu: h1000}\n", "", "prefill pool: gpu: unknown GPU", catalogs.ErrUnknownGPU},
		{"model does not fit a pool", "model: llama-3.1-70b\ngpu: h100-sxm\ntp: 4\ndisaggregation:\n  decode: {gpu: l40s, tp: 1}\n", "", "decode pool", memory.ErrDoesNotFit},
		{"unknown link", head + "disaggregation:\n  kv_transfer: {link: infiniband-nrd}\n", "disaggregation.kv_transfer.link", "did you mean infiniband-ndr", nil},
		{"nvlink across GPU types", head + "disaggregation:\n  decode: {gpu: h200}\n  kv_transfer: {link: nvlink4}\n", "disaggregation.kv_transfer.link", "h100-sxm and h200", nil},
		{"nvlink beyond a node", head + "disaggregation:\n  prefill: {replicas: 5}\n  decode: {replicas: 4}\n  kv_transfer: {link: nvlink4}\n", "disaggregation.kv_transfer.link", "need 9 h100-sxm GPUs, a node has 8", nil},
		{"nvlink of another generation", head + "disaggregation:\n  kv_transfer: {link: nvlink5}\n", "disaggregation.kv_transfer.link", "nvlink5 joins GPUs whose link is nvlink5; h100-sxm has nvlink4", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := decode(t, c.doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Resolve(scenario.Env{Catalog: cat})
			if err == nil {
				t.Fatal("resolved")
			}
			var fe *scenario.FieldError
			if c.field != "" && (!errors.As(err, &fe) || fe.Field != c.field) {
				t.Errorf("error %v, want a FieldError on %s", err, c.field)
			}
			if !strings.Contains(err.Error(), c.inMsg) || c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q, want %q (is %v)", err, c.inMsg, c.is)
			}
			// CheckFits, the planner's pruning, refuses the same
			// configurations without reading the workload.
			if _, ferr := s.CheckFits(scenario.Env{Catalog: cat}); ferr == nil || ferr.Error() != err.Error() {
				t.Errorf("CheckFits: %v, want %v", ferr, err)
			}
		})
	}
	// Nvlink within one node of H100s is fine.
	s, _ := decode(t, head+"disaggregation:\n  prefill: {replicas: 4}\n  decode: {replicas: 4}\n  kv_transfer: {link: nvlink4}\n")
	if _, err := s.Resolve(scenario.Env{Catalog: cat}); err != nil {
		t.Errorf("4 + 4 H100s over NVLink: %v", err)
	}
}

func TestDisaggregationDecodeErrors(t *testing.T) {
	for _, c := range []struct{ name, doc, field, inMsg string }{
		{"unknown pool key", head + "disaggregation:\n  prefill: {gpus: 2}\n", "disaggregation.prefill.gpus", "unknown key"},
		{"unknown pool engine key", head + "disaggregation:\n  decode:\n    engine: {max_num_seq: 2}\n", "disaggregation.decode.engine.max_num_seq", "unknown key"},
		{"fraction for a pool's replicas", head + "disaggregation:\n  decode: {replicas: 1.5}\n", "disaggregation.decode.replicas", "not an integer"},
		{"negative pool tp", head + "disaggregation:\n  decode: {tp: -1}\n", "disaggregation.decode.tp", "not in [1, 1024]"},
		{"pool router", head + "disaggregation:\n  prefill: {router: random}\n", "disaggregation.prefill.router", `"random"`},
		{"overlap", head + "disaggregation:\n  kv_transfer: {overlap: sometimes}\n", "disaggregation.kv_transfer.overlap", "none or layerwise"},
		{"bandwidth", head + "disaggregation:\n  kv_transfer: {bandwidth_gbps: -3}\n", "disaggregation.kv_transfer.bandwidth_gbps", "-3"},
		{"latency", head + "disaggregation:\n  kv_transfer: {latency_us: -1}\n", "disaggregation.kv_transfer.latency_us", "-1"},
		{"with autoscale", head + "autoscale: {max_replicas: 3, target: 5}\ndisaggregation:\n  decode: {gpu: h200}\n", "autoscale", "cannot be combined with disaggregation"},
		{"with speculative decoding", head + "engine:\n  speculative: {method: ngram, num_speculative_tokens: 3}\ndisaggregation:\n  decode: {gpu: h200}\n", "engine.speculative", "cannot be combined with disaggregation"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := decode(t, c.doc)
			var de *scenario.DecodeError
			if !errors.As(err, &de) || de.Field != c.field || !strings.Contains(err.Error(), c.inMsg) || de.Line == 0 {
				t.Errorf("error %v; want field %s with %q and a line", err, c.field, c.inMsg)
			}
		})
	}
}

// Autoscale and speculative decoding are refused with disaggregation
// however the scenario is built (a planner's or a sweep's, not decoded),
// by Resolve, CheckFits and the simulator's own check; speculative
// decoding turned off (no drafts) is no speculation.
func TestDisaggregationRefusesAutoscaleAndSpeculation(t *testing.T) {
	cat := builtin(t)
	base, err := decode(t, heterogeneous)
	if err != nil {
		t.Fatal(err)
	}
	scaled := base
	scaled.Autoscale = &scenario.AutoscaleSpec{MaxReplicas: 3, Target: 5}
	spec := base
	spec.Engine.Speculative = &engine.Speculative{Method: engine.SpecNgram, NumSpeculativeTokens: 3}
	for _, c := range []struct {
		name, field string
		s           scenario.Scenario
	}{{"autoscale", "autoscale", scaled}, {"speculative", "engine.speculative", spec}} {
		_, rerr := c.s.Resolve(scenario.Env{Catalog: cat})
		_, ferr := c.s.CheckFits(scenario.Env{Catalog: cat})
		for _, err := range []error{rerr, ferr} {
			var fe *scenario.FieldError
			if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(fe.Reason, "disaggregation") {
				t.Errorf("%s: %v, want a FieldError on %s naming disaggregation", c.name, err, c.field)
			}
		}
	}
	off := base
	off.Engine.Speculative = &engine.Speculative{Method: engine.SpecNgram}
	if _, err := off.Resolve(scenario.Env{Catalog: cat}); err != nil {
		t.Errorf("speculation off: %v", err)
	}
	// The simulator refuses them too, should a configuration reach it.
	res, err := base.Resolve(scenario.Env{Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	sc := res.Config
	sc.Speculative = &sim.Speculative{Method: engine.SpecNgram, K: 1, PerPosition: []float64{0.5}, ProposalRate: 1}
	as := res.Config
	as.Autoscale = &sim.Autoscale{MinReplicas: 1, MaxReplicas: 6, Metric: sim.ScaleOnRequestRate, Target: 5, IntervalS: 15}
	for _, c := range []struct {
		field string
		cfg   sim.Config
	}{{"engine.speculative", sc}, {"autoscale", as}} {
		var fe *hardware.FieldError
		if err := c.cfg.Validate(); !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("sim.Config.Validate: %v, want a FieldError on %s", err, c.field)
		}
	}
}

// A pool's engine changes only the settings it gives: a sweep or an
// override of the scenario's engine reaches every pool that does not set
// that field itself, through an encode–decode round trip.
func TestDisaggregationEngineOverridesSurviveOverrides(t *testing.T) {
	s, err := decode(t, heterogeneous)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := scenario.With(s, scenario.Override{Path: "engine.max_num_batched_tokens", Value: 4096},
		scenario.Override{Path: "disaggregation.decode.replicas", Value: 5})
	if err != nil {
		t.Fatal(err)
	}
	pre, dec := s2.Pool(scenario.PoolPrefill), s2.Pool(scenario.PoolDecode)
	if pre.Engine.MaxNumBatchedTokens != 16384 || dec.Engine.MaxNumBatchedTokens != 4096 || dec.Engine.MaxNumSeqs != 128 || dec.Replicas != 5 || pre.Replicas != 2 {
		t.Errorf("prefill budget %d, decode budget %d seqs %d replicas %d/%d; want 16384, 4096, 128, 2 and 5",
			pre.Engine.MaxNumBatchedTokens, dec.Engine.MaxNumBatchedTokens, dec.Engine.MaxNumSeqs, pre.Replicas, dec.Replicas)
	}
	// An override can turn disaggregation on, and null turns it off.
	on, err := scenario.With(scenario.Default(), scenario.Override{Path: "disaggregation.decode.replicas", Value: 2})
	if err != nil || on.Disaggregation == nil || on.Pool(scenario.PoolDecode).Replicas != 2 || on.Pool(scenario.PoolPrefill).Replicas != 1 {
		t.Errorf("turning disaggregation on: %+v, %v", on.Disaggregation, err)
	}
	off, err := scenario.With(s, scenario.Override{Path: "disaggregation", Value: nil})
	if err != nil || off.Disaggregation != nil {
		t.Errorf("turning it off: %+v, %v", off.Disaggregation, err)
	}
}

// EngineOverrides has every engine setting, by the same name and type,
// but speculative decoding, which a disaggregated scenario refuses.
func TestEngineOverridesCoverTheEngine(t *testing.T) {
	et, ot := reflect.TypeOf(engine.Config{}), reflect.TypeOf(scenario.EngineOverrides{})
	if et.NumField() != ot.NumField()+1 {
		t.Fatalf("engine.Config has %d fields, EngineOverrides %d (want all but speculative)", et.NumField(), ot.NumField())
	}
	for i := range et.NumField() {
		ef := et.Field(i)
		if ef.Name == "Speculative" {
			continue
		}
		of, ok := ot.FieldByName(ef.Name)
		if !ok || of.Type != reflect.PointerTo(ef.Type) || of.Tag.Get("yaml") != ef.Tag.Get("yaml") {
			t.Errorf("EngineOverrides.%s: %v %q, want *%v %q", ef.Name, of.Type, of.Tag.Get("yaml"), ef.Type, ef.Tag.Get("yaml"))
		}
	}
	// Apply sets exactly the given fields.
	n, b := 7, false
	got := scenario.EngineOverrides{MaxNumSeqs: &n, AsyncScheduling: &b}.Apply(engine.Defaults())
	want := engine.Defaults()
	want.MaxNumSeqs, want.AsyncScheduling = 7, false
	if got != want {
		t.Errorf("Apply: %+v, want %+v", got, want)
	}
}
