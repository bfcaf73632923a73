package steptime

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/models"
)

func TestDefaultProfileEveryGPU(t *testing.T) {
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range cat.GPUs() {
		p := DefaultProfile(g)
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", g.ID, err)
		}
		if p.GEMMHalfTokens <= 0 || p.Source == "" {
			t.Errorf("%s: half tokens %g, source %q", g.ID, p.GEMMHalfTokens, p.Source)
		}
	}
	// The fitted GPUs get their fitted half-token counts back.
	for id, want := range map[string]float64{"a100-80gb": 96.3, "h100-sxm": 193.7} {
		g, err := cat.GPU(id)
		if err != nil {
			t.Fatal(err)
		}
		if got := DefaultProfile(g).GEMMHalfTokens; math.Abs(got-want) > 0.15 {
			t.Errorf("%s: gemm_half_tokens %g, want %g", id, got, want)
		}
	}
}

// Profiles written before elementwise_bandwidth_efficiency and
// attention_kernel_overhead_us existed keep their behaviour.
func TestNewFieldsDefaultToOldBehaviour(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("h100-sxm")
	m, err := cat.Model("llama-2-7b")
	if err != nil {
		t.Fatal(err)
	}
	var p Profile
	old := `{"schema_version":1,"gemm_efficiency":0.7,"gemm_half_tokens":30,"bandwidth_efficiency":0.8,
		"attention_prefill_efficiency":0.5,"attention_decode_efficiency":0.7,"kernel_overhead_us":3,
		"link_efficiency":0.7,"all_reduce_latency_us":10,"step_overhead_us":1000,"per_seq_overhead_us":5,
		"per_prefill_overhead_us":20,"async_overlap":0.5}`
	if err := json.Unmarshal([]byte(old), &p); err != nil {
		t.Fatal(err)
	}
	if p.ElementwiseBandwidthEfficiency != 0 || p.AttentionKernelOverheadUS != 0 {
		t.Fatalf("new fields not zero: %+v", p)
	}
	sm, err := New(m, g, m.DefaultPrecision(), 1, p, false)
	if err != nil {
		t.Fatal(err)
	}
	elt := models.OpCost{DataBytes: 1e8, Count: 4}
	if got, want := sm.OpTime(models.OpElementwise, elt), 1e8/(g.HBMBandwidthGBps*1e9*0.8)+4*3e-6; math.Abs(got-want) > 1e-12 {
		t.Errorf("elementwise %g, want %g", got, want)
	}
	dec := models.OpCost{DataBytes: 1e7, FLOPs: 1e6, Count: 32}
	if got, want := sm.OpTime(models.OpAttnDecode, dec), 1e7/(g.HBMBandwidthGBps*1e9*0.7)+32*3e-6; math.Abs(got-want) > 1e-12 {
		t.Errorf("decode attention %g, want %g", got, want)
	}
	p.ElementwiseBandwidthEfficiency, p.AttentionKernelOverheadUS = 0.5, 15
	sm, _ = New(m, g, m.DefaultPrecision(), 1, p, false)
	if got, want := sm.OpTime(models.OpElementwise, elt), 1e8/(g.HBMBandwidthGBps*1e9*0.5)+4*3e-6; math.Abs(got-want) > 1e-12 {
		t.Errorf("elementwise with its own efficiency %g, want %g", got, want)
	}
	if got, want := sm.OpTime(models.OpAttnDecode, dec), 1e7/(g.HBMBandwidthGBps*1e9*0.7)+32*15e-6; math.Abs(got-want) > 1e-12 {
		t.Errorf("decode attention with its own overhead %g, want %g", got, want)
	}
}

func TestValidateNewFields(t *testing.T) {
	cat, _ := catalogs.Builtin()
	g, _ := cat.GPU("a100-80gb")
	for _, bad := range []func(p *Profile){
		func(p *Profile) { p.ElementwiseBandwidthEfficiency = 1.5 },
		func(p *Profile) { p.ElementwiseBandwidthEfficiency = -0.1 },
		func(p *Profile) { p.AttentionKernelOverheadUS = -1 },
		func(p *Profile) { p.AttentionKernelOverheadUS = math.NaN() },
	} {
		p := DefaultProfile(g)
		bad(&p)
		if p.Validate() == nil {
			t.Errorf("accepted %+v", p)
		}
	}
}
