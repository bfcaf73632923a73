package scenario

import (
	"fmt"
	"math"
	"slices"

	"github.com/headroom-sim/headroom/sim"
)

// AutoscaleSpec is the scenario's `autoscale:` section: an autoscaler
// (Kubernetes HPA or KEDA in front of vLLM) that starts and drains
// replicas during the run. replicas is then how many serve at the start.
// Zero values take the defaults below.
type AutoscaleSpec struct {
	// MinReplicas (default 1) and MaxReplicas (required; `plan` sizes it)
	// bound the replicas.
	MinReplicas int `yaml:"min_replicas" json:"min_replicas,omitempty"`
	MaxReplicas int `yaml:"max_replicas" json:"max_replicas,omitempty"`
	// Metric is request_rate (default), in_flight or kv_cache_usage.
	Metric string `yaml:"metric" json:"metric,omitempty"`
	// Target is the metric's value per replica the policy aims at: req/s
	// (request_rate), requests (in_flight) or a usage ratio in (0, 1]
	// (kv_cache_usage). Required; `plan` sets it to a target utilization
	// of the capacity it measured.
	Target float64 `yaml:"target" json:"target,omitempty"`
	// IntervalS is the evaluation period (default 15 s, HPA's sync period).
	IntervalS float64 `yaml:"interval_s" json:"interval_s,omitempty"`
	// ScaleDownStabilizationS (default 300 s, HPA's) delays scale-downs to
	// the highest replica count wanted over that window.
	ScaleDownStabilizationS *float64 `yaml:"scale_down_stabilization_s" json:"scale_down_stabilization_s,omitempty"`
	// Tolerance (default 0.1, HPA's): no change while the metric is within
	// that fraction of its target.
	Tolerance *float64 `yaml:"tolerance" json:"tolerance,omitempty"`
	// ScaleUpDelayS, when given, is the whole time from a scale-up
	// decision until the replica serves; otherwise it is ColdStart's sum.
	ScaleUpDelayS *float64      `yaml:"scale_up_delay_s" json:"scale_up_delay_s,omitempty"`
	ColdStart     ColdStartSpec `yaml:"cold_start" json:"cold_start,omitzero"`
}

// ColdStartSpec is what a new replica spends before it serves. The
// defaults are vLLM 0.11's start-up as its logs time it on an 80 GB GPU
// (CodeLlama-34B and Llama-2-7B, bf16, TP1: Loading weights took 28–59 s
// for 62.9 GiB and 12 s for 12.6 GiB, torch.compile 21 s and 16 s, graph
// capturing 2–6 s, 77–105 s from process start to the API server).
type ColdStartSpec struct {
	// ProvisionS is the time before the container starts: scheduling,
	// node provisioning, image pull (default 0: a node with the image is
	// at hand).
	ProvisionS float64 `yaml:"provision_s" json:"provision_s,omitempty"`
	// StartupS is the rest of vLLM's start-up besides loading weights,
	// compiling and capturing graphs: process and engine start, the
	// memory-profiling run, KV-cache allocation, warm-up (default 20 s;
	// 18–22 s in the logs).
	StartupS *float64 `yaml:"startup_s" json:"startup_s,omitempty"`
	// WeightsLoadGBps is the storage or network bandwidth a replica reads
	// its weights at, GB/s (default 1.16: 67.5 GB in 58 s; 2.4 GB/s on the
	// fastest logged start).
	WeightsLoadGBps float64 `yaml:"weights_load_gbps" json:"weights_load_gbps,omitempty"`
	// TorchCompileS is torch.compile's time (default 21 s; 0 with
	// --enforce-eager or a warm compile cache on the node).
	TorchCompileS *float64 `yaml:"torch_compile_s" json:"torch_compile_s,omitempty"`
	// CUDAGraphCaptureS is the CUDA-graph capture (default: estimated,
	// 1.9 ms per layer per captured batch size, from the logs' 6 s for 67
	// sizes of 48 layers).
	CUDAGraphCaptureS *float64 `yaml:"cuda_graph_capture_s" json:"cuda_graph_capture_s,omitempty"`
}

// Cold-start defaults (see ColdStartSpec).
const (
	DefaultStartupS           = 20.0
	DefaultWeightsLoadGBps    = 1.16
	DefaultTorchCompileS      = 21.0
	GraphCaptureSPerLayerSize = 0.0019
	DefaultAutoscaleInterval  = 15.0
	DefaultStabilizationS     = 300.0
	DefaultTolerance          = 0.1
)

// ColdStart is a scale-up delay and what it is made of, in seconds.
type ColdStart struct {
	ProvisionS   float64 `json:"provision_s"`
	StartupS     float64 `json:"startup_s"`
	WeightsLoadS float64 `json:"weights_load_s"`
	// WeightsGB is what one replica reads (every GPU's weights).
	WeightsGB         float64 `json:"weights_gb"`
	WeightsLoadGBps   float64 `json:"weights_load_gbps"`
	TorchCompileS     float64 `json:"torch_compile_s"`
	CUDAGraphCaptureS float64 `json:"cuda_graph_capture_s"`
	// CUDAGraphSizes is the batch sizes vLLM captures (1, 2, 4, then
	// every 8 up to the largest).
	CUDAGraphSizes int `json:"cuda_graph_sizes"`
	// ScaleUpDelayS is the total (or autoscale.scale_up_delay_s when set).
	ScaleUpDelayS float64 `json:"scale_up_delay_s"`
}

// graphSizes counts vLLM's CUDA-graph capture sizes up to largest:
// 1, 2, 4, then multiples of 8.
func graphSizes(largest int) int {
	n := 0
	for _, b := range []int{1, 2, 4} {
		if b <= largest {
			n++
		}
	}
	if largest >= 8 {
		n += largest / 8
	}
	return n
}

func validDuration(v float64) bool { return v >= 0 && v < 1e7 }

// notDuration is the reason v is refused where validDuration fails.
func notDuration(v float64) string { return fmt.Sprintf("must be a duration in [0, 1e7) s, got %g", v) }

// validate checks the section's own values; field is its path.
func (a *AutoscaleSpec) validate(replicas int) error {
	fe := func(sub, reason string) error { return &FieldError{Field: "autoscale." + sub, Reason: reason} }
	c := &a.ColdStart
	opt := func(p *float64) bool { return p == nil || validDuration(*p) }
	switch {
	case a.MinReplicas < 0 || a.MinReplicas > 4096:
		return fe("min_replicas", fmt.Sprintf("%d is not in [0, 4096] (0 = 1)", a.MinReplicas))
	case a.MaxReplicas < 0 || a.MaxReplicas > 4096:
		return fe("max_replicas", fmt.Sprintf("%d is not in [0, 4096]", a.MaxReplicas))
	case a.MaxReplicas > 0 && a.MaxReplicas < max(a.MinReplicas, 1):
		return fe("max_replicas", fmt.Sprintf("%d is below min_replicas %d", a.MaxReplicas, max(a.MinReplicas, 1)))
	case a.MaxReplicas > 0 && (replicas < max(a.MinReplicas, 1) || replicas > a.MaxReplicas):
		return &FieldError{Field: "replicas", Reason: fmt.Sprintf("the %d replicas serving at the start must be within autoscale's [%d, %d]", replicas, max(a.MinReplicas, 1), a.MaxReplicas)}
	case !slices.Contains([]string{"", sim.ScaleOnRequestRate, sim.ScaleOnInFlight, sim.ScaleOnKVUsage}, a.Metric):
		return fe("metric", fmt.Sprintf("%q is not %s, %s or %s", a.Metric, sim.ScaleOnRequestRate, sim.ScaleOnInFlight, sim.ScaleOnKVUsage))
	case !(a.Target >= 0) || a.Target > 1e9:
		return fe("target", fmt.Sprintf("must be a finite number > 0, got %g", a.Target))
	case a.Metric == sim.ScaleOnKVUsage && a.Target > 1:
		return fe("target", fmt.Sprintf("a KV-cache usage target is a ratio in (0, 1], got %g", a.Target))
	case !(a.IntervalS == 0 || a.IntervalS >= 1e-3 && a.IntervalS < 1e7):
		return fe("interval_s", fmt.Sprintf("must be in [0.001, 1e7) s (0 = 15), got %g", a.IntervalS))
	case !opt(a.ScaleDownStabilizationS):
		return fe("scale_down_stabilization_s", notDuration(*a.ScaleDownStabilizationS))
	case a.Tolerance != nil && !(*a.Tolerance >= 0 && *a.Tolerance < 1):
		return fe("tolerance", fmt.Sprintf("must be in [0, 1), got %g", *a.Tolerance))
	case !opt(a.ScaleUpDelayS):
		return fe("scale_up_delay_s", notDuration(*a.ScaleUpDelayS))
	case !validDuration(c.ProvisionS):
		return fe("cold_start.provision_s", notDuration(c.ProvisionS))
	case !opt(c.StartupS):
		return fe("cold_start.startup_s", notDuration(*c.StartupS))
	case !(c.WeightsLoadGBps >= 0 && c.WeightsLoadGBps <= 1e6):
		return fe("cold_start.weights_load_gbps", fmt.Sprintf("must be in (0, 1e6] GB/s (0 = %g), got %g", DefaultWeightsLoadGBps, c.WeightsLoadGBps))
	case !opt(c.TorchCompileS):
		return fe("cold_start.torch_compile_s", notDuration(*c.TorchCompileS))
	case !opt(c.CUDAGraphCaptureS):
		return fe("cold_start.cuda_graph_capture_s", notDuration(*c.CUDAGraphCaptureS))
	}
	return nil
}

func orDefault(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// ColdStartOf works out the scale-up delay of one replica: provisioning,
// start-up, its weights (every GPU's) over the load bandwidth,
// torch.compile and CUDA-graph capture. weightsBytesPerGPU and gpus are
// one replica's; layers and largestGraph (vLLM's largest captured batch)
// size the capture.
func (a *AutoscaleSpec) ColdStartOf(weightsBytesPerGPU float64, gpus, layers, largestGraph int) ColdStart {
	c := &a.ColdStart
	cs := ColdStart{ProvisionS: c.ProvisionS, StartupS: orDefault(c.StartupS, DefaultStartupS),
		WeightsLoadGBps: c.WeightsLoadGBps, TorchCompileS: orDefault(c.TorchCompileS, DefaultTorchCompileS)}
	if cs.WeightsLoadGBps == 0 {
		cs.WeightsLoadGBps = DefaultWeightsLoadGBps
	}
	cs.WeightsGB = weightsBytesPerGPU * float64(gpus) / 1e9
	cs.WeightsLoadS = cs.WeightsGB / cs.WeightsLoadGBps
	cs.CUDAGraphSizes = graphSizes(largestGraph)
	cs.CUDAGraphCaptureS = orDefault(c.CUDAGraphCaptureS, float64(cs.CUDAGraphSizes*layers)*GraphCaptureSPerLayerSize)
	cs.ScaleUpDelayS = cs.ProvisionS + cs.StartupS + cs.WeightsLoadS + cs.TorchCompileS + cs.CUDAGraphCaptureS
	if a.ScaleUpDelayS != nil {
		cs.ScaleUpDelayS = *a.ScaleUpDelayS
	}
	for _, p := range []*float64{&cs.WeightsGB, &cs.WeightsLoadS, &cs.CUDAGraphCaptureS, &cs.ScaleUpDelayS} {
		*p = math.Round(*p*1e3) / 1e3
	}
	return cs
}

// policy is the simulator's autoscaler with the defaults filled; a
// missing max_replicas or target is an error naming it.
func (a *AutoscaleSpec) policy(cs ColdStart) (*sim.Autoscale, error) {
	switch {
	case a.MaxReplicas == 0:
		return nil, &FieldError{Field: "autoscale.max_replicas", Reason: "is required (plan sizes it from the rate profile's peak)"}
	case a.Target == 0:
		return nil, &FieldError{Field: "autoscale.target", Reason: "is required: the metric's value per replica to aim at (plan sets it from the capacity it measures)"}
	}
	p := &sim.Autoscale{MinReplicas: max(a.MinReplicas, 1), MaxReplicas: a.MaxReplicas, Metric: a.Metric, Target: a.Target,
		IntervalS: a.IntervalS, ScaleUpDelayS: cs.ScaleUpDelayS,
		ScaleDownStabilizationS: orDefault(a.ScaleDownStabilizationS, DefaultStabilizationS), Tolerance: orDefault(a.Tolerance, DefaultTolerance)}
	if p.Metric == "" {
		p.Metric = sim.ScaleOnRequestRate
	}
	if p.IntervalS == 0 {
		p.IntervalS = DefaultAutoscaleInterval
	}
	return p, nil
}
