package scenario

import (
	"fmt"
	"slices"
	"sort"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/steptime"
	"github.com/headroom-sim/headroom/sim/workload"
)

// FieldError names an invalid field by its dotted path.
type FieldError = hardware.FieldError

// Scenario is one simulation's input. Field names are the public contract
// of ../shared/docs/scenario.md; new fields may be added, none renamed.
type Scenario struct {
	Model    string `yaml:"model" json:"model"`
	GPU      string `yaml:"gpu" json:"gpu"`
	TP       int    `yaml:"tp" json:"tp"`
	Replicas int    `yaml:"replicas" json:"replicas"`
	Router   string `yaml:"router" json:"router"`
	// DP is the data-parallel engine ranks behind each replica's API server
	// (vLLM --data-parallel-size): tp × dp GPUs per replica. The ranks of a
	// MoE model step together (every MoE layer exchanges their tokens); a
	// dense model's ranks run independently. 0 or 1 = one rank.
	DP int `yaml:"dp" json:"dp"`
	// ExpertParallel shards a MoE model's routed experts as whole experts
	// over the tp × dp GPUs of a replica (vLLM --enable-expert-parallel),
	// instead of slicing every expert over them. Without dp, a replica count
	// above one is read as data-parallel ranks (the older meaning: experts
	// over tp × replicas GPUs).
	ExpertParallel bool `yaml:"expert_parallel" json:"expert_parallel"`
	// StepTime chooses where kernel times come from.
	StepTime StepTimeSpec `yaml:"steptime" json:"steptime"`
	// WeightsDType "" serves the checkpoint as published.
	WeightsDType string `yaml:"weights_dtype" json:"weights_dtype"`
	// KVCacheDType auto follows the weights (16-bit for integer weights).
	KVCacheDType string  `yaml:"kv_cache_dtype" json:"kv_cache_dtype"`
	NetworkRTTMS float64 `yaml:"network_rtt_ms" json:"network_rtt_ms"`
	// Calibration names a step-time profile from `headroom calibrate`: a
	// file path (CLI) or a calibration id (API).
	Calibration string        `yaml:"calibration" json:"calibration"`
	Engine      engine.Config `yaml:"engine" json:"engine"`
	Workload    workload.Spec `yaml:"workload" json:"workload"`
	SLA         *sim.SLA      `yaml:"sla" json:"sla,omitempty"`
	Report      ReportSpec    `yaml:"report" json:"report"`
	// Disaggregation, when set, serves with separate prefill and decode
	// pools (disagg.go); gpu, tp, dp, replicas, router, calibration and
	// engine are then the pools' defaults.
	Disaggregation *DisaggregationSpec `yaml:"disaggregation" json:"disaggregation,omitempty"`
	// Autoscale, when set, starts and drains replicas during the run
	// (replicas serve at the start).
	Autoscale *AutoscaleSpec `yaml:"autoscale" json:"autoscale,omitempty"`
}

// StepTimeSpec chooses the step-time backend.
type StepTimeSpec struct {
	// Backend is "table" (measured kernel latencies, interpolated, where a
	// kernel database covers the shape; the fitted formulas elsewhere),
	// "formula" (the fitted formulas alone), or "" for the default.
	Backend string `yaml:"backend" json:"backend"`
	// KernelDB is a directory laid out like AIConfigurator's perf database
	// (<system>/<op>/<framework>/<version>/*.parquet); "" = the built-in
	// measurements of the GPU, when Headroom has them.
	KernelDB string `yaml:"kernel_db" json:"kernel_db"`
	// MoERouting is the measured fused-MoE routing distribution the table
	// backend reads: balanced | power_law_1.2 (default) | power_law_1.01 | random
	// (uniform top-k, as random-token benchmark prompts route; the balanced
	// rows carried to those loads).
	MoERouting string `yaml:"moe_routing" json:"moe_routing"`
}

// ReportSpec controls what the report contains.
type ReportSpec struct {
	StallThresholdMS float64 `yaml:"stall_threshold_ms" json:"stall_threshold_ms"`
	Timeseries       bool    `yaml:"timeseries" json:"timeseries"`
}

// Default is the built-in scenario `headroom simulate` runs without a file:
// Llama-3.1-8B on one H100 SXM, vLLM defaults, 1,000 Poisson requests at
// 10 req/s with 512 input and 256 output tokens.
func Default() Scenario {
	s := base()
	s.Model, s.GPU = "llama-3.1-8b", "h100-sxm"
	s.applyWorkloadDefaults()
	return s
}

// base holds the defaults that apply field by field (a file that sets
// engine.max_num_seqs keeps every other engine default).
func base() Scenario {
	return Scenario{
		TP: 1, Replicas: 1, Router: sim.RouterRoundRobin, KVCacheDType: "auto",
		Engine: engine.Defaults(),
		Report: ReportSpec{StallThresholdMS: 300},
	}
}

// Workload defaults apply per sub-section: an arrival, input or output
// given in the file replaces the default one whole.
var (
	defaultArrival = workload.ArrivalSpec{Type: workload.ArrivalPoisson, RateRPS: 10}
	defaultInput   = workload.LengthSpec{Type: workload.LengthFixed, Value: 512}
	defaultOutput  = workload.LengthSpec{Type: workload.LengthFixed, Value: 256}
)

// DefaultRequests is the request count when none is given.
const DefaultRequests = 1000

func (s *Scenario) applyWorkloadDefaults() {
	w := &s.Workload
	if w.Trace != nil {
		return
	}
	staged := len(w.Stages) > 0 || len(w.RateProfile) > 0
	if w.Arrival.IsZero() && !staged {
		w.Arrival = defaultArrival
	}
	if w.Arrival.Type == "" && !staged {
		// A rate alone means Poisson arrivals, a concurrency alone a closed loop.
		switch {
		case w.Arrival.RateRPS > 0 && w.Arrival.Concurrency == 0:
			w.Arrival.Type = workload.ArrivalPoisson
		case w.Arrival.Concurrency > 0 && w.Arrival.RateRPS == 0:
			w.Arrival.Type = workload.ArrivalClosedLoop
		}
	}
	if w.InputTokens.IsZero() {
		w.InputTokens = defaultInput
	}
	if w.OutputTokens.IsZero() {
		w.OutputTokens = defaultOutput
	}
	if w.Requests == 0 && !staged {
		w.Requests = DefaultRequests
	}
	if w.Seed == 0 {
		w.Seed = 1
	}
}

// routers are the router names a scenario (and each disaggregated pool)
// accepts.
var routers = []string{sim.RouterRoundRobin, sim.RouterLeastOutstanding, sim.RouterLeastKV}

// notRouter is the reason r is refused as a router.
func notRouter(r string) string {
	return fmt.Sprintf("%q is not round_robin, least_outstanding or least_kv", r)
}

// Validate checks the fields that need no catalog.
func (s *Scenario) Validate() error {
	switch {
	case s.Model == "":
		return &FieldError{Field: "model", Reason: "is required"}
	case s.GPU == "":
		return &FieldError{Field: "gpu", Reason: "is required"}
	case s.TP < 1 || s.TP > 1024:
		return &FieldError{Field: "tp", Reason: fmt.Sprintf("%d is not in [1, 1024]", s.TP)}
	case s.Replicas < 1 || s.Replicas > 4096:
		return &FieldError{Field: "replicas", Reason: fmt.Sprintf("%d is not in [1, 4096]", s.Replicas)}
	case s.DP < 0 || s.DP > 1024:
		return &FieldError{Field: "dp", Reason: fmt.Sprintf("%d is not in [0, 1024]", s.DP)}
	case !slices.Contains([]string{"", "table", "formula"}, s.StepTime.Backend):
		return &FieldError{Field: "steptime.backend", Reason: fmt.Sprintf("%q is not table or formula", s.StepTime.Backend)}
	case s.StepTime.MoERouting != "" && !slices.Contains(steptime.Routings, s.StepTime.MoERouting):
		return &FieldError{Field: "steptime.moe_routing", Reason: fmt.Sprintf("%q is not balanced, power_law_1.2, power_law_1.01 or random", s.StepTime.MoERouting)}
	case !slices.Contains(routers, s.Router):
		return &FieldError{Field: "router", Reason: notRouter(s.Router)}
	case !(s.NetworkRTTMS >= 0 && s.NetworkRTTMS < 1e7):
		return &FieldError{Field: "network_rtt_ms", Reason: fmt.Sprintf("%g is not a duration >= 0", s.NetworkRTTMS)}
	case !(s.Report.StallThresholdMS > 0):
		return &FieldError{Field: "report.stall_threshold_ms", Reason: "must be > 0"}
	}
	if err := s.Workload.Validate("workload"); err != nil {
		return err
	}
	if ws := &s.Workload; ws.Trace == nil {
		// Times the simulator's clock cannot hold (the trace's are checked
		// once it is read, in Resolve).
		w := sim.Workload{Requests: ws.Requests, Arrival: ws.Arrival, MaxConcurrency: ws.MaxConcurrency, Stages: ws.LoadStages(0), MultiTurn: ws.MultiTurn}
		if err := w.ValidateSizes(); err != nil {
			return err
		}
		if err := w.ValidateTimes(); err != nil {
			return err
		}
	}
	if s.SLA != nil {
		if err := validateSLA(s.SLA); err != nil {
			return err
		}
	}
	if s.Disaggregation != nil {
		if s.Engine.Speculative.On() {
			return &FieldError{Field: "engine.speculative", Reason: SpeculativeDisaggReason}
		}
		if err := s.Disaggregation.validate(); err != nil {
			return err
		}
	}
	if s.Autoscale != nil {
		if s.Disaggregation != nil {
			// The autoscaler starts and drains the replicas of one pool;
			// a prefill and a decode pool would need a policy each.
			return &FieldError{Field: "autoscale", Reason: "cannot be combined with disaggregation (the autoscaler scales one pool of replicas; size the prefill and decode pools with plan instead)"}
		}
		if err := s.Autoscale.validate(s.Replicas); err != nil {
			return err
		}
	}
	return nil
}

func validateSLA(sla *sim.SLA) error {
	n := 0
	for _, m := range []struct {
		name string
		qs   map[string]float64
	}{{"ttft_ms", sla.TTFTMS}, {"tpot_ms", sla.TPOTMS}, {"itl_ms", sla.ITLMS}, {"e2e_ms", sla.E2EMS}} {
		keys := make([]string, 0, len(m.qs))
		for k := range m.qs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, q := range keys {
			if _, ok := (stats.Summary{}).At(q); !ok {
				return &FieldError{Field: "sla." + m.name + "." + q, Reason: "unknown quantile (want mean, p50, p90, p95, p99, p999 or max)"}
			}
			if v := m.qs[q]; !(v > 0) || v > 1e9 {
				return &FieldError{Field: "sla." + m.name + "." + q, Reason: fmt.Sprintf("%g is not a positive limit in ms", v)}
			}
			n++
		}
	}
	if n == 0 {
		return &FieldError{Field: "sla", Reason: "states no bound"}
	}
	return nil
}
