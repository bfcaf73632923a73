package scenario

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/memory"
)

// DisaggregationSpec splits serving into a prefill pool and a decode pool
// (vLLM's disaggregated prefill with a KV connector, as llm-d and Dynamo
// deploy it) and says how the KV cache moves between them. A pool's
// fields left out take the scenario's (gpu, tp, dp, replicas, router,
// calibration), and its engine settings are the scenario's engine with
// the pool's changes on top, field by field.
type DisaggregationSpec struct {
	Prefill    PoolSpec       `yaml:"prefill" json:"prefill"`
	Decode     PoolSpec       `yaml:"decode" json:"decode"`
	KVTransfer KVTransferSpec `yaml:"kv_transfer" json:"kv_transfer"`
}

// PoolSpec is one pool's serving fields; zero values take the scenario's.
type PoolSpec struct {
	GPU         string          `yaml:"gpu" json:"gpu,omitempty"`
	TP          int             `yaml:"tp" json:"tp,omitempty"`
	DP          int             `yaml:"dp" json:"dp,omitempty"`
	Replicas    int             `yaml:"replicas" json:"replicas,omitempty"`
	Router      string          `yaml:"router" json:"router,omitempty"`
	Calibration string          `yaml:"calibration" json:"calibration,omitempty"`
	Engine      EngineOverrides `yaml:"engine" json:"engine"`
}

// KVTransferSpec is the link the KV cache crosses and how the connector
// uses it.
type KVTransferSpec struct {
	// Link is an interconnect id (`headroom catalog interconnects`):
	// nvlink4 within a node, infiniband-ndr or roce-400 between nodes …
	// ("" = DefaultKVLink).
	Link string `yaml:"link" json:"link,omitempty"`
	// BandwidthGBps replaces the link's achieved bandwidth, per GPU and
	// direction, in GB/s (0 = the catalog's).
	BandwidthGBps float64 `yaml:"bandwidth_gbps" json:"bandwidth_gbps,omitempty"`
	// LatencyUS replaces the link's fixed cost per transfer (null = the
	// catalog's).
	LatencyUS *float64 `yaml:"latency_us" json:"latency_us,omitempty"`
	// Overlap is none (the decode engine reads the prompt's blocks after
	// the prefill: vLLM's NixlConnector) or layerwise (the prefill pushes
	// each layer's KV as it computes it: P2pNcclConnector); "" = none.
	Overlap string `yaml:"overlap" json:"overlap,omitempty"`
}

// DefaultKVLink is the link a disaggregated scenario gets when it names
// none: one 400 Gb/s InfiniBand NDR port per GPU, as on DGX/HGX H100.
const DefaultKVLink = "infiniband-ndr"

// Pool names, as the scenario's fields name them.
const (
	PoolPrefill = "prefill"
	PoolDecode  = "decode"
)

// SpeculativeDisaggReason is why a disaggregated scenario refuses
// engine.speculative: the simulator runs one drafter beside one pool of
// targets, and a split deployment would need the drafter's prompt pass on
// the prefill pool and its KV moved to the decode pool with the target's,
// which it does not model.
const SpeculativeDisaggReason = "cannot be combined with disaggregation: Headroom does not model a drafter split over a prefill and a decode pool (its prompt pass and KV cache would move with the target's)"

// validate checks the fields that need no catalog.
func (d *DisaggregationSpec) validate() error {
	for _, p := range []struct {
		name string
		spec *PoolSpec
	}{{PoolPrefill, &d.Prefill}, {PoolDecode, &d.Decode}} {
		fe := func(f, reason string) error {
			return &FieldError{Field: "disaggregation." + p.name + "." + f, Reason: reason}
		}
		ps := p.spec
		switch {
		case ps.TP < 0 || ps.TP > 1024:
			return fe("tp", fmt.Sprintf("%d is not in [1, 1024] (0 = the scenario's)", ps.TP))
		case ps.DP < 0 || ps.DP > 1024:
			return fe("dp", fmt.Sprintf("%d is not in [1, 1024] (0 = the scenario's)", ps.DP))
		case ps.Replicas < 0 || ps.Replicas > 4096:
			return fe("replicas", fmt.Sprintf("%d is not in [1, 4096] (0 = the scenario's)", ps.Replicas))
		case ps.Router != "" && !slices.Contains(routers, ps.Router):
			return fe("router", notRouter(ps.Router))
		}
	}
	k := &d.KVTransfer
	fe := func(f, reason string) error {
		return &FieldError{Field: "disaggregation.kv_transfer." + f, Reason: reason}
	}
	switch {
	case !(k.BandwidthGBps >= 0 && k.BandwidthGBps <= sim.MaxKVLinkGBps):
		return fe("bandwidth_gbps", fmt.Sprintf("%g is not in (0, %g] GB/s (0 = the link's)", k.BandwidthGBps, float64(sim.MaxKVLinkGBps)))
	case k.LatencyUS != nil && !(*k.LatencyUS >= 0 && *k.LatencyUS <= 1e6):
		return fe("latency_us", fmt.Sprintf("%g is not in [0, 1e6] µs", *k.LatencyUS))
	case k.Overlap != "" && k.Overlap != sim.OverlapNone && k.Overlap != sim.OverlapLayerwise:
		return fe("overlap", fmt.Sprintf("%q is not none or layerwise", k.Overlap))
	}
	return nil
}

// Pool returns the scenario one pool serves as: the scenario with the
// pool's fields in place of its own and no disaggregation. Without a
// disaggregation section it is the scenario itself.
func (s *Scenario) Pool(name string) Scenario {
	ps := *s
	ps.Disaggregation = nil
	if s.Disaggregation == nil {
		return ps
	}
	p := s.Disaggregation.Decode
	if name == PoolPrefill {
		p = s.Disaggregation.Prefill
	}
	if p.GPU != "" {
		ps.GPU = p.GPU
	}
	if p.TP > 0 {
		ps.TP = p.TP
	}
	if p.DP > 0 {
		ps.DP = p.DP
	}
	if p.Replicas > 0 {
		ps.Replicas = p.Replicas
	}
	if p.Router != "" {
		ps.Router = p.Router
	}
	if p.Calibration != "" {
		ps.Calibration = p.Calibration
	}
	ps.Engine = p.Engine.Apply(s.Engine)
	return ps
}

// poolFields are the fields a pool sets: errors about them are named
// under the pool.
var poolFields = []string{"gpu", "tp", "dp", "replicas", "router", "calibration", "engine", "expert_parallel"}

// poolError names a pool's error under disaggregation.<pool>: a field
// error on one of the pool's fields by its path there, anything else with
// the pool as context.
func poolError(pool string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		head, _, _ := strings.Cut(fe.Field, ".")
		if slices.Contains(poolFields, head) {
			return &FieldError{Field: "disaggregation." + pool + "." + fe.Field, Reason: fe.Reason}
		}
		return err
	}
	return fmt.Errorf("%s pool: %w", pool, err)
}

// DisaggResolved is what resolving a disaggregated scenario adds: the
// prefill pool's memory (Resolved's own Memory and Setup are the decode
// pool's) and the link.
type DisaggResolved struct {
	PrefillMemory memory.Profile
	PrefillSetup  memory.Setup
	Link          *hardware.Interconnect
}

// checkFitsDisaggregated is CheckFits for both pools: the decode pool's
// memory, or the first pool's reason it cannot start.
func (s *Scenario) checkFitsDisaggregated(env Env) (memory.Profile, error) {
	if err := s.Validate(); err != nil {
		return memory.Profile{}, err
	}
	dec, pre := s.Pool(PoolDecode), s.Pool(PoolPrefill)
	dsv, err := dec.resolveServing(env)
	if err != nil {
		return memory.Profile{}, poolError(PoolDecode, err)
	}
	psv, err := pre.resolveServing(env)
	if err != nil {
		return memory.Profile{}, poolError(PoolPrefill, err)
	}
	if _, err := s.kvLink(psv.gpu, dsv.gpu, psv.gpus(pre.TP), dsv.gpus(dec.TP)); err != nil {
		return memory.Profile{}, err
	}
	return dsv.mem, nil
}

// resolveDisaggregated resolves the decode pool as a scenario of its own
// (workload, SLA and report included) and adds the prefill pool and the
// link to its configuration.
func (s *Scenario) resolveDisaggregated(env Env) (*Resolved, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	dec, pre := s.Pool(PoolDecode), s.Pool(PoolPrefill)
	psv, err := pre.resolveServing(env)
	if err != nil {
		return nil, poolError(PoolPrefill, err)
	}
	res, err := dec.Resolve(env)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return res, err
		}
		return nil, poolError(PoolDecode, err)
	}
	dc := &res.Config
	link, err := s.kvLink(psv.gpu, dc.GPU, psv.gpus(pre.TP), dc.Replicas*max(dc.DP, 1)*dc.TP)
	if err != nil {
		return nil, err
	}
	kt := s.Disaggregation.KVTransfer
	l := sim.KVLink{Name: link.ID, BandwidthGBps: link.BandwidthGBps(), LatencyUS: link.LatencyUS}
	if kt.BandwidthGBps > 0 {
		l.BandwidthGBps = kt.BandwidthGBps
	}
	if kt.LatencyUS != nil {
		l.LatencyUS = *kt.LatencyUS
	}
	m, bs := psv.model, psv.eng.BlockSize
	p := sim.Pool{
		GPU: psv.gpu, TP: pre.TP, Replicas: psv.replicas, DP: psv.dp, MoETP: psv.moeTP, MoEEP: psv.moeEP, Router: pre.Router,
		Engine: psv.eng, NumGPUBlocks: psv.mem.NumGPUBlocks, BlockBytes: psv.mem.BlockBytes,
		Profile: psv.prof, KernelDB: psv.db, MoERouting: s.StepTime.MoERouting,
	}
	if m.NumSlidingLayers() > 0 {
		p.BlockUnits = func(n int) int { return memory.BlocksForTokens(m, bs, n) }
	}
	res.Config.Disagg = &sim.Disaggregation{Prefill: p, Link: l, Layerwise: kt.Overlap == sim.OverlapLayerwise}
	if err := res.Config.Validate(); err != nil {
		return nil, err
	}
	res.Disaggregation = &DisaggResolved{PrefillMemory: psv.mem, PrefillSetup: psv.setup, Link: link}
	return res, nil
}

// kvLink looks the link up and checks it can join the two pools: a node
// link (NVLink, PCIe) joins GPUs of one kind whose scale-up link it is,
// all in one node.
func (s *Scenario) kvLink(pre, dec *hardware.GPU, preGPUs, decGPUs int) (*hardware.Interconnect, error) {
	id := s.Disaggregation.KVTransfer.Link
	if id == "" {
		id = DefaultKVLink
	}
	links, err := catalogs.BuiltinInterconnects()
	if err != nil {
		return nil, err
	}
	fe := func(reason string) error {
		return &FieldError{Field: "disaggregation.kv_transfer.link", Reason: reason}
	}
	l, err := links.Get(id)
	if err != nil {
		return nil, fe(err.Error())
	}
	if l.Scope != hardware.ScopeNode {
		return l, nil
	}
	if dec.ID != pre.ID {
		return nil, fe(fmt.Sprintf("%s joins GPUs of one node; the pools run on %s and %s (use a cluster link: infiniband-ndr, roce-400 …)", l.ID, pre.ID, dec.ID))
	}
	if r := l.Joins(dec); r != "" {
		return nil, fe(r)
	}
	if n, node := preGPUs+decGPUs, dec.TPLimit(); n > node {
		return nil, fe(fmt.Sprintf("%s joins the GPUs of one node: the pools need %d %s GPUs, a node has %d (use a cluster link: infiniband-ndr, roce-400 …)", l.ID, n, dec.ID, node))
	}
	return l, nil
}

// gpus is the GPUs the serving's replicas use at tensor-parallel degree tp.
func (sv *serving) gpus(tp int) int { return sv.replicas * sv.dp * tp }
