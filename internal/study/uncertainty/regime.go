package uncertainty

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/steptime"
	"github.com/headroom-sim/headroom/sim/workload"
)

// Regime is what a run is, as far as the error model tells runs apart: the
// features a scenario has before it runs, and its load as its own report
// states it. Every field is a category; Features lists them by name.
type Regime struct {
	// ModelClass: dense, moe, or mla (an MLA model, DeepSeek's, MoE or
	// not: its attention is its own kernels).
	ModelClass string `json:"model_class"`
	// GPUFamily is the measured system family whose kernel fits the GPU's
	// step times come from (steptime.TemplateSystem): hopper, blackwell or
	// workstation (GDDR cards).
	GPUFamily string `json:"gpu_family"`
	// Kernels: measured when the step times read a kernel table
	// (steptime.backend table with the GPU's own or a given database),
	// template when they scale another GPU's fitted fractions of peak.
	Kernels string `json:"kernels"`
	// Layout: single (one GPU per engine), tp (tensor parallel), dp-ep
	// (data-parallel ranks or expert parallelism), pd (disaggregated
	// prefill and decode).
	Layout string `json:"layout"`
	// Quantisation is the weights' storage type (the experts' in a MoE
	// model): 16-bit, fp8, int8, int4 or fp4.
	Quantisation string `json:"quantisation"`
	// Loop: closed (users who wait for their last response) or open
	// (arrivals at a rate, a trace).
	Loop string `json:"loop"`
	// Load is the share of saturation the run's report shows (LoadShare):
	// light below 0.5, heavy below 0.95, saturated at or past it.
	Load string `json:"load"`
	// LoadShare is the most of the engine the run used: the largest of
	// its peak running requests over max_num_seqs, its peak KV-cache
	// usage, and the share of a request's E2E spent queued in the engine
	// (at 0.2 or more a queue is building: the share counts as 1).
	LoadShare float64 `json:"load_share"`
	// PromptBand and OutputBand bin the mean prompt and output lengths:
	// up to 512, 2k, 8k, 32k tokens, or more (output: 128, 512, 2k, 8k).
	PromptBand string `json:"prompt_band"`
	OutputBand string `json:"output_band"`
	// GPU is the catalog id of the run's GPU (cfg.GPU),
	// and PromptTokens and OutputTokens the mean lengths the bands bin:
	// the envelope checks them, the pools do not split on them.
	GPU          string  `json:"gpu"`
	PromptTokens float64 `json:"prompt_tokens"`
	OutputTokens float64 `json:"output_tokens"`
}

// The features' names, in the order reports list them.
const (
	FeatureModelClass   = "model_class"
	FeatureGPUFamily    = "gpu_family"
	FeatureKernels      = "kernels"
	FeatureLayout       = "layout"
	FeatureQuantisation = "quantisation"
	FeatureLoop         = "loop"
	FeatureLoad         = "load"
	FeaturePromptBand   = "prompt_band"
	FeatureOutputBand   = "output_band"
)

// Features lists the regime's features, the most telling first: the
// pools fall back by dropping them from the end (Model.Lookup). The loop
// and the load come first because the validation residuals split most
// on them (a closed loop's TTFT is its cohort's queue; a saturated run's
// latency is its queue), the lengths last.
var Features = []string{FeatureLoop, FeatureLoad, FeatureModelClass, FeatureKernels, FeatureGPUFamily,
	FeatureLayout, FeatureQuantisation, FeaturePromptBand, FeatureOutputBand}

// Value is the regime's value of feature ("" for an unknown feature).
func (r Regime) Value(feature string) string {
	switch feature {
	case FeatureModelClass:
		return r.ModelClass
	case FeatureGPUFamily:
		return r.GPUFamily
	case FeatureKernels:
		return r.Kernels
	case FeatureLayout:
		return r.Layout
	case FeatureQuantisation:
		return r.Quantisation
	case FeatureLoop:
		return r.Loop
	case FeatureLoad:
		return r.Load
	case FeaturePromptBand:
		return r.PromptBand
	case FeatureOutputBand:
		return r.OutputBand
	}
	return ""
}

// queueingShare is the share of E2E queued at which a run counts as
// saturated: a queue that long is one the engine is not draining.
const queueingShare = 0.2

// RegimeOf reads the regime of a run from its configuration and its
// simulated report (its load and its mean lengths). It reads nothing the
// simulator has not already produced.
func RegimeOf(cfg *sim.Config, rep *sim.Report) Regime {
	r := Regime{
		ModelClass:   modelClass(cfg),
		GPUFamily:    gpuFamily(cfg.GPU),
		Kernels:      "template",
		Layout:       layout(cfg),
		Quantisation: quantisation(cfg),
		Loop:         "open",
	}
	if cfg.KernelDB != nil {
		r.Kernels = "measured"
	}
	if cfg.Workload.Arrival.Type == workload.ArrivalClosedLoop || closedStages(cfg.Workload.Stages) {
		r.Loop = "closed"
	}
	r.LoadShare = loadShare(cfg, rep)
	switch {
	case r.LoadShare >= 0.95:
		r.Load = "saturated"
	case r.LoadShare >= 0.5:
		r.Load = "heavy"
	default:
		r.Load = "light"
	}
	in, out := meanLengths(rep)
	r.PromptTokens, r.OutputTokens = in, out
	if cfg.GPU != nil {
		r.GPU = cfg.GPU.ID
	}
	r.PromptBand = band(in, []float64{512, 2048, 8192, 32768})
	r.OutputBand = band(out, []float64{128, 512, 2048, 8192})
	return r
}

func closedStages(st []workload.StageSpec) bool {
	if len(st) == 0 {
		return false
	}
	for _, s := range st {
		if s.Concurrency == 0 {
			return false
		}
	}
	return true
}

func modelClass(cfg *sim.Config) string {
	switch m := cfg.Model; {
	case m == nil:
		return ""
	case m.MLA != nil:
		return "mla"
	case m.IsMoE():
		return "moe"
	}
	return "dense"
}

// gpuFamily names the family of the measured system whose fits g's step
// times take.
func gpuFamily(g *hardware.GPU) string {
	if g == nil {
		return ""
	}
	switch steptime.TemplateSystem(g) {
	case "h100_sxm", "h200_sxm":
		return "hopper"
	case "b200_sxm", "b300_sxm":
		return "blackwell"
	case "rtx_pro_6000_server":
		return "workstation"
	}
	return "other"
}

func layout(cfg *sim.Config) string {
	switch {
	case cfg.Disagg != nil:
		return "pd"
	case cfg.DP > 1 || cfg.EP > 1 || cfg.MoEEP > 1:
		return "dp-ep"
	case cfg.TP > 1:
		return "tp"
	}
	return "single"
}

func quantisation(cfg *sim.Config) string {
	d := cfg.Precision.Weights
	if cfg.Model != nil && cfg.Model.IsMoE() && cfg.Precision.Experts != "" {
		d = cfg.Precision.Experts
	}
	switch d {
	case hardware.BF16, hardware.FP16, hardware.FP32:
		return "16-bit"
	case hardware.MXFP4:
		return "fp4"
	}
	return string(d)
}

// loadShare is the most of its engine a run used (Regime.LoadShare).
func loadShare(cfg *sim.Config, rep *sim.Report) float64 {
	seqs := cfg.Engine.MaxNumSeqs
	running, kv := float64(rep.MaxRunning), rep.KVCache.PeakUsageRatio
	if d := rep.Disaggregation; d != nil {
		// The decode pool holds the running requests and their KV.
		running, kv = float64(d.Decode.MaxRunning), d.Decode.KVCache.PeakUsageRatio
	}
	s := kv
	if seqs > 0 {
		s = math.Max(s, running/float64(seqs))
	}
	if rep.E2EMS.Mean > 0 && rep.QueueMS.Mean/rep.E2EMS.Mean >= queueingShare {
		s = 1
	}
	if rep.Preemptions > 0 || rep.Requests.Unfinished > 0 {
		s = 1
	}
	return math.Min(s, 1)
}

// meanLengths are the mean prompt and output tokens of the run's requests.
func meanLengths(rep *sim.Report) (in, out float64) {
	t := rep.Throughput
	if t.RequestsPerS > 0 {
		return t.InputTokensPerS / t.RequestsPerS, t.OutputTokensPerS / t.RequestsPerS
	}
	return 0, 0
}

// band names the bin of x under the upper edges (tokens).
func band(x float64, edges []float64) string {
	lo := 0.0
	for _, e := range edges {
		if x <= e {
			return fmt.Sprintf("%s-%s", tokens(lo), tokens(e))
		}
		lo = e
	}
	return fmt.Sprintf(">%s", tokens(lo))
}

func tokens(x float64) string {
	if x >= 1024 && math.Mod(x, 1024) == 0 {
		return fmt.Sprintf("%.0fk", x/1024)
	}
	return fmt.Sprintf("%.0f", x)
}
