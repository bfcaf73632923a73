package sim

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
	"github.com/headroom-sim/headroom/sim/workload"
)

// Routers pick the replica a request goes to.
const (
	RouterRoundRobin       = "round_robin"
	RouterLeastOutstanding = "least_outstanding"
	RouterLeastKV          = "least_kv"
)

// Config is everything one simulation run needs, resolved: catalog entries
// looked up, engine defaults filled, files already read.
type Config struct {
	Model     *models.Model
	GPU       *hardware.GPU
	Precision models.Precision
	TP        int
	// Replicas is the number of serving instances behind the router.
	Replicas int
	// DP is the data-parallel engine ranks of each instance (vLLM
	// --data-parallel-size; 0 or 1 = one). The ranks of a MoE model step
	// together.
	DP int
	// MoETP × MoEEP split the routed experts over the TP × DP GPUs of an
	// instance: MoETP slices of every expert, MoEEP groups of whole experts
	// (vLLM --enable-expert-parallel: 1 × TP·DP). 0 = derived from EP.
	MoETP, MoEEP int
	// EP is the expert-parallel group size (1 = off), the older way of
	// stating MoEEP: experts over TP × DP GPUs.
	EP     int
	Router string
	// Engine must be resolved (engine.Config.Resolve).
	Engine engine.Config
	// NumGPUBlocks is the KV-cache block count of each replica's GPUs
	// (from package memory, or a logged count).
	NumGPUBlocks int
	// BlockUnits gives the blocks one sequence of n tokens holds;
	// nil means ceil(n / block_size).
	BlockUnits func(n int) int
	// BlockBytes is one block's size on one GPU (for swap transfers).
	BlockBytes float64
	Profile    steptime.Profile
	// KernelDB, when set, gives measured kernel latencies to the step-time
	// model (the table backend); nil uses the profile's formulas alone.
	KernelDB *steptime.KernelDB
	// MoERouting is the measured routing distribution the table backend
	// reads for fused MoE ("" = steptime's default).
	MoERouting string
	// NetworkRTTMS is the client–server round trip added to end-to-end
	// TTFT and E2E.
	NetworkRTTMS float64
	// Speculative turns speculative decoding on (speculative.go; nil: off).
	Speculative *Speculative

	// Autoscale, when set, scales the replicas during the run
	// (autoscale.go); Replicas then serve from the start.
	Autoscale *Autoscale

	// Disagg, when set, adds a prefill pool in front of the engines the
	// fields above describe, which become the decode pool (disagg.go).
	Disagg *Disaggregation

	Workload Workload
	SLA      *SLA
	Report   ReportOptions
	Seed     uint64
	// MaxEvents bounds the run (0 = DefaultMaxEvents).
	MaxEvents int64
	Logger    *slog.Logger
}

// DefaultMaxEvents bounds a run whose Config sets no limit.
const DefaultMaxEvents = 2_000_000_000

// Workload is the resolved traffic of a run.
type Workload struct {
	// Requests is the total number of requests (turns count one each);
	// 0 lets the stages or the trace decide.
	Requests int
	// Warmup requests run before the measured ones and are left out of
	// every statistic and of the SLA, as benchmark tools' warm-up phases
	// (aiperf --warmup-request-count, vllm bench --num-warmups). They come
	// on top of Requests. Closed-loop clients wait for the whole warm-up
	// to finish, then start the measured phase together.
	Warmup  int
	Arrival workload.ArrivalSpec
	// MaxConcurrency caps requests in flight at the client (0 = none).
	MaxConcurrency int
	// Stages run one after another; a stage with neither a rate nor a
	// concurrency is idle (no requests arrive: a rate profile's empty
	// window).
	Stages        []workload.StageSpec
	Input, Output workload.LengthSampler
	SharedPrefix  *workload.SharedPrefixSpec
	MultiTurn     *workload.MultiTurnSpec
	// Trace replaces Arrival, Input and Output when set.
	Trace []workload.TraceRecord
	// TraceHashTokens is the tokens each TraceRecord.HashIDs entry covers
	// (0 = workload.MooncakeBlockTokens).
	TraceHashTokens int
}

// ReportOptions control what a run reports.
type ReportOptions struct {
	StallThresholdMS float64
	Timeseries       bool
}

// SLA is a set of per-metric latency bounds in milliseconds, each on a
// named quantile ("p50", "p99", "mean" …) of the run's distribution.
type SLA struct {
	TTFTMS map[string]float64 `json:"ttft_ms,omitempty" yaml:"ttft_ms"`
	TPOTMS map[string]float64 `json:"tpot_ms,omitempty" yaml:"tpot_ms"`
	ITLMS  map[string]float64 `json:"itl_ms,omitempty" yaml:"itl_ms"`
	E2EMS  map[string]float64 `json:"e2e_ms,omitempty" yaml:"e2e_ms"`
}

// moeSplit is the (moe_tp, moe_ep) split of an instance's experts.
func (c *Config) moeSplit() (tp, ep int) {
	gpus := max(c.TP, 1) * max(c.DP, 1)
	switch {
	case c.MoETP > 0 || c.MoEEP > 0:
		return max(c.MoETP, 1), max(c.MoEEP, 1)
	case c.EP > 1:
		return max(gpus/c.EP, 1), c.EP
	}
	return gpus, 1
}

// prefixField puts prefix before the field a *hardware.FieldError names;
// other errors pass unchanged.
func prefixField(prefix string, err error) error {
	var fe *hardware.FieldError
	if errors.As(err, &fe) {
		return &hardware.FieldError{Field: prefix + fe.Field, Reason: fe.Reason}
	}
	return err
}

func orOne(v float64) float64 {
	if v == 0 {
		return 1
	}
	return v
}

// Validate checks everything a run relies on: catalog entries present,
// the engine settings (engine.Config.Validate, fields named "engine.…"),
// the block counts, the router, and every time against the simulator's
// clock (see Workload.ValidateTimes). Errors are *hardware.FieldError
// named as the scenario's fields where one is at fault. Run calls it.
func (c *Config) Validate() error {
	switch {
	case c.Model == nil || c.GPU == nil:
		return fmt.Errorf("sim: model and gpu are required")
	}
	// The model sizes the step-time model and the KV blocks: its
	// dimensions within their architectural maxima (catalog models are
	// validated already; a Config built by hand is checked here).
	if err := c.Model.Validate(); err != nil {
		return prefixField("model.", err)
	}
	switch {
	case c.TP < 1:
		return &hardware.FieldError{Field: "tp", Reason: "must be >= 1"}
	case c.Replicas < 1 || c.Replicas > 4096:
		return &hardware.FieldError{Field: "replicas", Reason: fmt.Sprintf("%d is not in [1, 4096]", c.Replicas)}
	case c.DP < 0 || c.DP > 4096:
		return &hardware.FieldError{Field: "dp", Reason: "must be in [0, 4096]"}
	case c.MoETP < 0 || c.MoEEP < 0 || (c.MoETP > 0 && c.MoEEP > 0 && c.MoETP*c.MoEEP != max(c.TP, 1)*max(c.DP, 1)):
		return &hardware.FieldError{Field: "moe_ep", Reason: fmt.Sprintf("moe_tp %d × moe_ep %d must equal tp × dp = %d GPUs", c.MoETP, c.MoEEP, max(c.TP, 1)*max(c.DP, 1))}
	case c.NumGPUBlocks < 1:
		return &hardware.FieldError{Field: "engine.num_gpu_blocks_override", Reason: "the KV cache has no blocks"}
	case c.Router != RouterRoundRobin && c.Router != RouterLeastOutstanding && c.Router != RouterLeastKV:
		return &hardware.FieldError{Field: "router", Reason: fmt.Sprintf("%q is not round_robin, least_outstanding or least_kv", c.Router)}
	case c.Workload.Trace == nil && (c.Workload.Input == nil || c.Workload.Output == nil):
		return fmt.Errorf("sim: workload needs input and output length samplers or a trace")
	}
	if err := engine.CheckBlocks(c.NumGPUBlocks, c.BlockBytes, float64(c.GPU.MemoryBytes), c.Engine.NumGPUBlocksOverride > 0); err != nil {
		return prefixField("engine.", err)
	}
	if c.Autoscale != nil {
		if err := c.Autoscale.validate(c.Replicas); err != nil {
			return err
		}
	}
	if c.Disagg != nil && c.Disagg.Prefill.Replicas > 4096 {
		return &hardware.FieldError{Field: "disaggregation.prefill.replicas", Reason: "must be in [1, 4096]"}
	}
	if err := c.validateRanks(); err != nil {
		return err
	}
	if err := c.Engine.Validate(c.Model); err != nil {
		return prefixField("engine.", err)
	}
	if sp := c.Speculative; sp != nil {
		if c.Engine.Scheduler == engine.SchedulerV0 {
			return &hardware.FieldError{Field: "engine.speculative", Reason: "needs scheduler v1"}
		}
		if err := sp.validate(); err != nil {
			return err
		}
	}
	if c.Disagg != nil {
		if err := c.Disagg.validate(c); err != nil {
			return err
		}
	}
	return c.validateTimes()
}
