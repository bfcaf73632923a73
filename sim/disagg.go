package sim

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/engine"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Disaggregated serving (vLLM's disaggregated prefill with a KV connector,
// as llm-d and Dynamo deploy it) splits the engines into two pools: a
// prefill pool that computes prompts and a decode pool that generates the
// tokens, each with its own GPU, parallelism, engine settings and router,
// and moves each request's KV cache from one to the other over a link.
//
// A request's path (pdpool.go):
//
//  1. The proxy routes it to a prefill instance (the prefill router); its
//     API server admits it, and an engine rank computes the prompt with
//     max_tokens = 1 as vLLM's proxies send it, chunked and batched like
//     any prompt. Its blocks stay allocated after the prompt is done,
//     until the decode side holds the KV (vLLM's delay_free_blocks).
//  2. The first-token response returns through the prefill API server to
//     the proxy, which sends the request to a decode instance (the decode
//     router; chosen at arrival for layer-wise pushes, which need their
//     destination up front). Its API server admits and tokenises it.
//  3. The decode rank admits it when it has blocks for the whole prompt
//     (less what its own prefix cache holds), at a scheduling step, in
//     arrival order, behind its preempted requests, with a free seat, and
//     not in a step that preempted: vLLM's scheduler allocating a request
//     whose KV loads asynchronously (WAITING_FOR_REMOTE_KVS). Until then
//     it waits: that is the admission time.
//  4. The KV transfer (kvtransfer.go): with overlap none (vLLM's
//     NixlConnector) the decode rank reads the prompt's blocks once it has
//     allocated them; with overlap layerwise (P2pNcclConnector) the prefill
//     pushes each layer's KV as soon as the layer is computed, during the
//     prefill, and the decode rank admits it into its blocks when it
//     arrives. The prefill's blocks are freed when the transfer is done.
//  5. With the KV in place the decode engine recomputes the last prompt
//     token (vLLM counts num_computed_tokens = prompt − 1) and samples
//     the first output token in its next step, then decodes as usual;
//     a request it preempts is recomputed locally, as vLLM does.
//
// Every request passes through both pools once, and its TTFT splits into
// consecutive parts that sum to it: prefill queue, prefill, KV admission,
// KV transfer and first decode step (see TTFTBreakdown).

// Disaggregation is the prefill pool and the KV transfer of a
// disaggregated run. The Config's own serving fields (GPU, TP, Replicas,
// DP, MoETP/MoEEP, Router, Engine, NumGPUBlocks, BlockUnits, BlockBytes,
// Profile, KernelDB, MoERouting) describe the decode pool; the model and
// its precision are shared.
type Disaggregation struct {
	Prefill Pool
	Link    KVLink
	// Layerwise pushes each layer's KV as the prefill computes it
	// (P2pNcclConnector); false reads the prompt's blocks after the
	// prefill, once the decode rank has allocated them (NixlConnector).
	Layerwise bool
}

// Pool is one pool's serving fields, as the Config's own are.
type Pool struct {
	GPU          *hardware.GPU
	TP           int
	Replicas     int
	DP           int
	MoETP, MoEEP int
	Router       string
	// Engine must be resolved (engine.Config.Resolve).
	Engine       engine.Config
	NumGPUBlocks int
	// BlockUnits gives the blocks a sequence of n tokens holds; nil means
	// ceil(n / block_size).
	BlockUnits func(n int) int
	// BlockBytes is one block's size on one GPU of the pool.
	BlockBytes float64
	Profile    steptime.Profile
	KernelDB   *steptime.KernelDB
	MoERouting string
}

// KVLink is the link each GPU moves its shard of a KV cache over.
type KVLink struct {
	// Name is the interconnect's catalog id (for the report).
	Name string
	// BandwidthGBps is what one transfer achieves per GPU and direction,
	// in GB/s.
	BandwidthGBps float64
	// LatencyUS is the fixed cost of one transfer.
	LatencyUS float64
}

// Overlap modes, as the report names them.
const (
	OverlapNone      = "none"
	OverlapLayerwise = "layerwise"
)

// MaxKVLinkGBps bounds a link's bandwidth (100 TB/s per GPU).
const MaxKVLinkGBps = 1e5

// validate checks the prefill pool and the link; fields are named as the
// scenario names them.
func (d *Disaggregation) validate(c *Config) error {
	p := &d.Prefill
	fe := func(field, reason string) error {
		return &hardware.FieldError{Field: "disaggregation.prefill." + field, Reason: reason}
	}
	gpus := max(p.TP, 1) * max(p.DP, 1)
	switch {
	case p.GPU == nil:
		return fe("gpu", "is required")
	case p.TP < 1:
		return fe("tp", "must be >= 1")
	case p.Replicas < 1:
		return fe("replicas", "must be >= 1")
	case p.DP < 0 || p.DP > 4096:
		return fe("dp", "must be in [0, 4096]")
	case p.MoETP < 0 || p.MoEEP < 0 || (p.MoETP > 0 && p.MoEEP > 0 && p.MoETP*p.MoEEP != gpus):
		return fe("expert_parallel", fmt.Sprintf("moe_tp %d × moe_ep %d must equal tp × dp = %d GPUs", p.MoETP, p.MoEEP, gpus))
	case p.NumGPUBlocks < 1:
		return fe("engine.num_gpu_blocks_override", "the KV cache has no blocks")
	case p.Router != RouterRoundRobin && p.Router != RouterLeastOutstanding && p.Router != RouterLeastKV:
		return fe("router", fmt.Sprintf("%q is not round_robin, least_outstanding or least_kv", p.Router))
	case !(p.BlockBytes >= 0) || math.IsInf(p.BlockBytes, 0):
		return fe("block_bytes", "must be a finite number >= 0")
	}
	switch {
	case c.Autoscale != nil:
		// The autoscaler starts and drains the run's instances as one
		// pool of replicas.
		return &hardware.FieldError{Field: "autoscale", Reason: "cannot be combined with disaggregation (the autoscaler scales one pool of replicas)"}
	case c.Speculative != nil || p.Engine.Speculative.On():
		// One drafter serves one pool of targets: the drafter's prompt
		// pass and KV cache do not move between pools.
		return &hardware.FieldError{Field: "engine.speculative", Reason: "cannot be combined with disaggregation (the drafter's prompt pass and KV cache do not move between pools)"}
	}
	if err := p.Engine.Validate(c.Model); err != nil {
		return prefixField("disaggregation.prefill.engine.", err)
	}
	if err := engine.CheckBlocks(p.NumGPUBlocks, p.BlockBytes, float64(p.GPU.MemoryBytes), p.Engine.NumGPUBlocksOverride > 0); err != nil {
		return prefixField("disaggregation.prefill.engine.", err)
	}
	l := d.Link
	switch {
	case !(l.BandwidthGBps > 0 && l.BandwidthGBps <= MaxKVLinkGBps):
		return &hardware.FieldError{Field: "disaggregation.kv_transfer.bandwidth_gbps", Reason: fmt.Sprintf("%g is not in (0, %g] GB/s", l.BandwidthGBps, float64(MaxKVLinkGBps))}
	case c.BlockBytes <= 0 || p.BlockBytes <= 0:
		return &hardware.FieldError{Field: "disaggregation", Reason: "both pools need their KV block size in bytes to time the transfer"}
	}
	if r := durationReason(l.LatencyUS, 1e3, "µs"); r != "" {
		return &hardware.FieldError{Field: "disaggregation.kv_transfer.latency_us", Reason: r}
	}
	// The longest request's KV must cross the link within the clock.
	n := max(c.Engine.MaxModelLen, p.Engine.MaxModelLen)
	bytes := math.Max(float64(c.blockUnits()(n))*c.BlockBytes, float64(d.prefillConfig(c).blockUnits()(n))*p.BlockBytes)
	if t, ok := toTime(bytes/l.BandwidthGBps, 1, true); !ok || t == beyond {
		return &hardware.FieldError{Field: "disaggregation.kv_transfer.bandwidth_gbps", Reason: fmt.Sprintf(
			"%g GB/s moves the KV cache of one max_model_len request (%d tokens, %.4g MB per GPU) in %.3g s, past the %d s (about 116 days) the simulator covers",
			l.BandwidthGBps, n, bytes/1e6, bytes/l.BandwidthGBps/1e9, MaxSimulatedSeconds)}
	}
	return nil
}

// prefillConfig is c with the prefill pool's serving fields, for building
// that pool's step-time model.
func (d *Disaggregation) prefillConfig(c *Config) *Config {
	p := &d.Prefill
	pc := *c
	pc.Disagg = nil
	pc.GPU, pc.TP, pc.Replicas, pc.DP, pc.EP = p.GPU, p.TP, p.Replicas, p.DP, 0
	pc.MoETP, pc.MoEEP, pc.Router, pc.Engine = p.MoETP, p.MoEEP, p.Router, p.Engine
	pc.NumGPUBlocks, pc.BlockUnits, pc.BlockBytes = p.NumGPUBlocks, p.BlockUnits, p.BlockBytes
	pc.Profile, pc.KernelDB, pc.MoERouting = p.Profile, p.KernelDB, p.MoERouting
	return &pc
}
