package steptime

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
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
		sys, measured := MeasuredSystems[g.ID]
		switch {
		case measured && !strings.Contains(p.Source, "fitted to measured kernels: "+sys):
			t.Errorf("%s: source %q does not name its own kernel tables", g.ID, p.Source)
		case !measured && !strings.HasPrefix(p.Source, "template "+TemplateSystem(g)):
			t.Errorf("%s: source %q does not name its template", g.ID, p.Source)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	for name, bad := range map[string]func(p *Profile){
		"gemm.bf16.efficiency":              func(p *Profile) { c := p.GEMM[FormatBF16]; c.Efficiency = 1.5; p.GEMM[FormatBF16] = c },
		"gemm.bf16.overhead_us":             func(p *Profile) { c := p.GEMM[FormatBF16]; c.OverheadUS = math.NaN(); p.GEMM[FormatBF16] = c },
		"attention.decode.bf16.overhead_us": func(p *Profile) { c := p.Attention.Decode["bf16"]; c.OverheadUS = -1; p.Attention.Decode["bf16"] = c },
		"attention.prefill.bf16.tensor_efficiency": func(p *Profile) {
			c := p.Attention.Prefill["bf16"]
			c.TensorEfficiency = 0
			p.Attention.Prefill["bf16"] = c
		},
		"moe.fp8.block_tokens": func(p *Profile) {
			p.MoE[FormatFP8] = MoECoeffs{Efficiency: 0.5, BandwidthEfficiency: 0.5, BlockTokens: -1}
		},
		"comm.nccl_ll_efficiency":          func(p *Profile) { p.Comm.NCCLLLEfficiency = 5 },
		"elementwise.bandwidth_efficiency": func(p *Profile) { p.Elementwise.BandwidthEfficiency = 0 },
		"cpu.async_overlap":                func(p *Profile) { p.CPU.AsyncOverlap = 2 },
		"schema_version":                   func(p *Profile) { p.SchemaVersion = 1 },
		"gemm.bf16":                        func(p *Profile) { delete(p.GEMM, FormatBF16) },
	} {
		p := BaseProfile().Clone()
		bad(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}
