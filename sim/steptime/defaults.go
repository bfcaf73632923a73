package steptime

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
)

// The default profiles of the measured GPUs, fitted to their kernel
// tables by internal/study/kernelfit (regenerated with `go test
// ./internal/study/kernelfit -update`; the test fails when a refit does not
// reproduce them).
//
//go:embed profiles/*.json
var profileFS embed.FS

// MeasuredSystems maps catalog GPU ids to the kernel-table system whose
// measurements fit their default profile.
var MeasuredSystems = map[string]string{
	"h100-sxm":     "h100_sxm",
	"h200":         "h200_sxm",
	"b200":         "b200_sxm",
	"b300":         "b300_sxm",
	"rtx-pro-6000": "rtx_pro_6000_server",
}

// SiblingSystems pairs each measured system with its family's other one:
// the same architecture and kernels (H100 and H200 are one Hopper die with
// different memory; B300 is a Blackwell B200 with more memory and FP4
// rate), whose measured utilisation stands in where a system's own tables
// lack a configuration.
var SiblingSystems = map[string]string{
	"h100_sxm": "h200_sxm", "h200_sxm": "h100_sxm",
	"b200_sxm": "b300_sxm", "b300_sxm": "b200_sxm",
}

// PredecessorSystems maps a measured system to the previous generation's
// measured system: Blackwell runs every kernel Hopper runs (the Triton and
// Marlin paths compile for SM100 too) and vLLM picks its fastest MoE
// backend, so a Blackwell fused-MoE layer is never slower than Hopper's
// measured one (KernelDB.PredecessorMoE).
var PredecessorSystems = map[string]string{
	"b200_sxm": "h200_sxm", "b300_sxm": "h200_sxm",
}

// PredecessorUtilisationFormats are the MoE formats whose successor tables
// time another kernel than the one vLLM serves with: on SM100 vLLM runs
// mxfp4 experts on FlashInfer's TRT-LLM kernels, while the collector's
// B200 mxfp4 rows sit 4-7x off the bandwidth roofline (slower than the
// H200's rows in absolute time; measured gpt-oss-120b serving on B200
// decodes about twice as fast as on H200). For these formats the bound is
// the predecessor's utilisation on the successor's own peaks.
var PredecessorUtilisationFormats = map[string]bool{"mxfp4": true}

// measuredProfile returns the embedded fitted kernel profile of system,
// with the host costs (HostCosts) laid over it.
func measuredProfile(system string) (Profile, bool) {
	b, err := profileFS.ReadFile("profiles/" + system + ".json")
	if err != nil {
		return Profile{}, false
	}
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		panic(fmt.Sprintf("steptime: embedded profile %s: %v", system, err))
	}
	h := HostCosts()
	p.CPU, p.CPUV0, p.Frontend = h.CPU, h.CPUV0, h.Frontend
	return p, true
}

// Host holds the costs of the serving host rather than of the GPU's
// kernels: the engine's CPU time per step and the API server's and
// client's time per request and token. They are fitted to measured serving
// runs (internal/study/calibrate.FitHost on every fourth run of the fit
// half, calibrate.HostSplit, of ../shared/data/measured/aiconfigurator-silicon:
// 104 of its 823 runs; regenerated with
// `HEADROOM_FIT_HOST=1 go test ./internal/study/calibrate -run TestFitHost
// -update`) and are the same for every GPU.
type Host struct {
	Source   string         `json:"source"`
	CPU      CPUCoeffs      `json:"cpu"`
	CPUV0    CPUCoeffs      `json:"cpu_v0"`
	Frontend FrontendCoeffs `json:"frontend"`
}

// HostCosts returns the embedded fitted host costs.
func HostCosts() Host {
	b, err := profileFS.ReadFile("profiles/host.json")
	if err != nil {
		panic("steptime: no embedded host costs: " + err.Error())
	}
	var h Host
	if err := json.Unmarshal(b, &h); err != nil {
		panic("steptime: embedded host costs: " + err.Error())
	}
	return h
}

// TemplateSystem is the measured system whose fitted fractions an
// unmeasured GPU takes: its family's measured GPU.
func TemplateSystem(g *hardware.GPU) string {
	if s, ok := MeasuredSystems[g.ID]; ok {
		return s
	}
	id := strings.ToLower(g.ID)
	switch {
	case strings.HasPrefix(g.MemoryType, "GDDR"):
		// Workstation and consumer cards: GDDR memory, PCIe between GPUs.
		return "rtx_pro_6000_server"
	case strings.HasPrefix(id, "b3"), strings.HasPrefix(id, "gb3"):
		return "b300_sxm"
	case strings.HasPrefix(id, "b"), strings.HasPrefix(id, "gb"):
		return "b200_sxm"
	case strings.HasPrefix(id, "h2"):
		return "h200_sxm"
	}
	// Hopper, and every other datacenter GPU (Ampere, AMD, Gaudi): the
	// H100 SXM's fractions of peak on the GPU's own peaks.
	return "h100_sxm"
}

// DefaultProfile returns the uncalibrated coefficients for g: the profile
// fitted to g's own kernel measurements when Headroom has them (the five
// GPUs of MeasuredSystems), else its family template's fitted fractions of
// peak, which the formulas apply to g's own peak FLOPs, bandwidth and link
// (Source says which). docs/steptime.md has the derivation and the
// held-out errors.
func DefaultProfile(g *hardware.GPU) Profile {
	sys := TemplateSystem(g)
	p, ok := measuredProfile(sys)
	if !ok {
		p = BaseProfile()
		p.Source = "base (no fitted profile for " + sys + ")"
	}
	p = p.Clone()
	if sib, ok := SiblingSystems[sys]; ok {
		if sp, ok := measuredProfile(sib); ok {
			if borrowed := borrowFormats(&p, sp); len(borrowed) > 0 {
				p.Source += fmt.Sprintf("; %s from %s (the family's other measured GPU; %s has no such tables)", strings.Join(borrowed, ", "), sib, sys)
			}
		}
	}
	if _, measured := MeasuredSystems[g.ID]; measured {
		return p
	}
	p.Source = fmt.Sprintf("template %s (%s) on %s's peaks", sys, p.Source, g.ID)
	switch {
	case g.Vendor == "amd":
		// No measurements: ROCm GEMMs reach a lower fraction of peak.
		scaleGEMM(&p, 0.75)
		p.Source += "; amd: GEMM efficiency × 0.75 (unmeasured)"
	case g.Vendor == "intel":
		scaleGEMM(&p, 0.8)
		p.Source += "; gaudi: GEMM efficiency × 0.8 (unmeasured)"
	}
	if k := g.ScaleUp.Kind; k == "none" || strings.HasPrefix(k, "pcie") {
		if !strings.HasPrefix(sys, "rtx") {
			// A PCIe-only GPU on an NVLink template: NCCL over PCIe
			// reaches about a third of the link's rate, and vLLM's
			// custom all-reduce is off beyond two GPUs.
			p.Comm.NCCLLinkEfficiency = 0.35
			p.Comm.CustomMaxBytesByGPUs = map[int]float64{}
			p.Comm.CustomAllReduceMaxBytes = 0
			p.Source += "; PCIe all-reduce"
		}
	}
	return p
}

func scaleGEMM(p *Profile, f float64) {
	for k, c := range p.GEMM {
		c.Efficiency *= f
		p.GEMM[k] = c
	}
	for k, c := range p.MoE {
		c.Efficiency *= f
		p.MoE[k] = c
	}
}

// borrowFormats copies into p the GEMM and fused-MoE coefficients of the
// formats from has but p lacks: fractions of peak that carry across a
// family's GPUs. It returns what it copied, as "moe mxfp4" and "gemm nvfp4".
func borrowFormats(p *Profile, from Profile) []string {
	var out []string
	for _, f := range from.Formats() {
		if _, ok := p.GEMM[f]; !ok {
			p.GEMM[f] = from.GEMM[f]
			out = append(out, "gemm "+f)
		}
	}
	for _, f := range sortedKeysOf(from.MoE) {
		if _, ok := p.MoE[f]; !ok {
			p.MoE[f] = from.MoE[f]
			out = append(out, "moe "+f)
		}
	}
	return out
}
