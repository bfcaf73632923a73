package steptime

import (
	"math"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// Backends: where kernel times come from.
const (
	// BackendFormula: the fitted formulas of the Profile for every kernel.
	BackendFormula = "formula"
	// BackendTable: measured kernel latencies (a KernelDB), interpolated,
	// wherever the tables cover the shape; the formulas elsewhere.
	BackendTable = "table"
)

// Model predicts step times for one model served at one precision and
// tensor-parallel degree on one GPU type.
type Model struct {
	model  *models.Model
	prec   models.Precision
	shapes models.Shapes
	cost   *models.CostModel
	prof   Profile
	hw     Hardware
	gpu    *hardware.GPU
	db     *KernelDB
	tp     int
	dp     int // data-parallel ranks whose tokens meet in the MoE layers
	moeTP  int // the experts' split: slices of every expert over moeTP GPUs,
	moeEP  int // whole experts over moeEP groups
	async  bool
	v0     bool // vLLM's V0 engine: CPUTime uses the profile's CPUV0

	routing     string
	graphTokens int // steps of up to this many tokens replay a CUDA graph

	attn     AttentionShape
	attnSWA  AttentionShape
	kvBytesL float64 // KV bytes per token per layer on one GPU

	memoTok   []float64 // dense part by token count (NaN: not computed)
	memoMoE   []float64 // MoE part by the group's token count (CUDA-graph steps)
	memoMoEE  []float64 // the same for eager steps
	memoSamp  []float64 // sampled part by sampled count
	memoLimit int
}

// New builds a step-time model on the formula backend. async says whether
// the engine overlaps CPU scheduling with GPU execution
// (vLLM --async-scheduling).
func New(m *models.Model, g *hardware.GPU, p models.Precision, tp int, prof Profile, async bool) (*Model, error) {
	if err := prof.Validate(); err != nil {
		return nil, err
	}
	tp = max(tp, 1)
	s := &Model{model: m, prec: p, prof: prof.Clone(), gpu: g, hw: NewHardware(g), tp: tp, dp: 1, moeTP: tp, moeEP: 1, async: async,
		routing: RoutingPowerLaw, memoLimit: 1 << 15}
	s.rebuild()
	return s, nil
}

func (s *Model) rebuild() {
	s.cost = s.model.NewCostModelEP(s.prec, s.tp, s.moeEP)
	s.shapes = s.model.ShapesSplit(s.prec, s.tp, s.moeTP, s.moeEP)
	a := s.shapes.Attn
	kvb := s.prec.KV.Bytes()
	kvName := "bf16"
	if kvb == 1 {
		kvName = "fp8"
	}
	s.attn = AttentionShape{Key: AttentionKey{KVDType: kvName, HeadDim: a.HeadDim, Heads: a.Heads, KVHeads: a.KVHeads}, KVBytes: kvb}
	s.attnSWA = s.attn
	s.attnSWA.Key.Window = a.Window
	s.kvBytesL = s.model.KVBytesPerTokenLayer(s.prec.KV, s.tp)
	s.resetMemo()
}

func (s *Model) resetMemo() { s.memoTok, s.memoMoE, s.memoMoEE, s.memoSamp = nil, nil, nil, nil }

// WithKernelDB switches to the table backend over db (nil: the formula).
func (s *Model) WithKernelDB(db *KernelDB) *Model {
	s.db = db
	s.resetMemo()
	return s
}

// Backend names where kernel times come from.
func (s *Model) Backend() string {
	if s.db != nil {
		return BackendTable
	}
	return BackendFormula
}

// WithExpertParallel spreads the routed experts over an expert-parallel
// group of ep GPUs (ep = tp × data-parallel ranks; 1 = off).
func (s *Model) WithExpertParallel(ep int) *Model {
	if ep > s.tp && s.model.MoE != nil {
		return s.WithMoESplit(1, ep, ep/s.tp)
	}
	return s.WithMoESplit(s.tp, 1, 1)
}

// WithMoESplit serves the routed experts over the tp × dp GPUs of dp
// data-parallel ranks, split moeTP × moeEP (moeTP slices of every expert,
// whole experts over moeEP groups); the MoE layers see every rank's
// tokens, exchanged by an all-gather and a reduce-scatter across the
// ranks.
func (s *Model) WithMoESplit(moeTP, moeEP, dp int) *Model {
	s.moeTP, s.moeEP, s.dp = max(moeTP, 1), max(moeEP, 1), max(dp, 1)
	s.rebuild()
	return s
}

// WithMoERouting picks the measured routing distribution the table
// backend reads (RoutingPowerLaw by default: real prompts load experts
// unevenly, and the most loaded rank sets the layer's time).
func (s *Model) WithMoERouting(r string) *Model {
	s.routing = r
	s.resetMemo()
	return s
}

// WithCUDAGraphs makes steps of up to maxTokens tokens run as CUDA graph
// replays (vLLM captures batches up to max_cudagraph_capture_size); larger
// steps launch every kernel from the host. 0 turns graphs off.
func (s *Model) WithCUDAGraphs(maxTokens int) *Model {
	s.graphTokens = maxTokens
	s.resetMemo()
	return s
}

// CUDAGraphTokens is vLLM's largest captured batch: min(2 ×
// max_num_seqs, 512), and no more than the token budget.
func CUDAGraphTokens(maxNumSeqs, maxBatchedTokens int) int {
	return min(2*maxNumSeqs, 512, maxBatchedTokens)
}

// Profile returns the coefficients in use.
func (s *Model) Profile() Profile { return s.prof }

// Cost is the underlying FLOPs/bytes model.
func (s *Model) Cost() *models.CostModel { return s.cost }

// Shapes are the per-GPU kernel shapes of one pass.
func (s *Model) Shapes() models.Shapes { return s.shapes }

// Breakdown is a predicted step, in seconds.
type Breakdown struct {
	Ops [models.NumOpKinds]float64
	GPU float64
	CPU float64
	// Total is the step's wall time: GPU plus the CPU time not hidden
	// behind it.
	Total float64
}

// WithEngineV0 prices the engine's host time as vLLM's V0 engine spends
// it (Profile.CPUV0).
func (s *Model) WithEngineV0() *Model {
	s.v0 = true
	return s
}

// cpuCoeffs are the engine's host costs: V1's, or V0's where it has them.
func (s *Model) cpuCoeffs() *CPUCoeffs {
	if s.v0 && s.prof.CPUV0 != (CPUCoeffs{}) {
		return &s.prof.CPUV0
	}
	return &s.prof.CPU
}

// CPUTime is the engine's CPU time for a step with the given shape.
func (s *Model) CPUTime(b *models.Batch) float64 {
	c := s.cpuCoeffs()
	seqs := float64(b.DecodeSeqs + b.PrefillChunks)
	return (c.StepOverheadUS + c.PerSeqOverheadUS*seqs + c.PerPrefillOverheadUS*float64(b.PrefillChunks)) * 1e-6 * s.prof.Scale.speed().Overhead
}

func (s *Model) total(gpu, cpu float64) float64 {
	t := gpu + cpu
	if s.async || (s.v0 && s.cpuCoeffs() == &s.prof.CPUV0) {
		// Async scheduling (V1) or V0's asynchronous output processing.
		t -= math.Min(cpu*s.cpuCoeffs().AsyncOverlap, gpu)
	}
	return t
}

// groupTokens is the token rows the MoE layers see: the expert-parallel
// group's (the other data-parallel ranks are assumed to carry as many
// unless the batch says).
func (s *Model) groupTokens(b *models.Batch) int {
	if b.GroupTokens > 0 {
		return b.GroupTokens
	}
	return b.Tokens() * s.dp
}

// StepTime is the step's wall time in seconds.
func (s *Model) StepTime(b *models.Batch) float64 {
	if b.Tokens() == 0 {
		return 0
	}
	return s.total(s.gpuTime(b), s.CPUTime(b))
}

// gpuTime is the step's GPU time in seconds (b has tokens).
func (s *Model) gpuTime(b *models.Batch) float64 {
	t := b.Tokens()
	gpu := s.memo(&s.memoTok, t, func(n int) float64 { return s.denseTime(n, nil) }) +
		s.memo(&s.memoSamp, b.Sampled, func(n int) float64 { return s.sampledTime(n, s.eager(t), nil) }) +
		s.attentionTime(b, nil)
	if s.shapes.MoE != nil {
		g := s.groupTokens(b)
		eager := s.eager(t)
		if eager {
			gpu += s.memo(&s.memoMoEE, g, func(n int) float64 { return s.moeTime(n, true, nil) })
		} else {
			gpu += s.memo(&s.memoMoE, g, func(n int) float64 { return s.moeTime(n, false, nil) })
		}
	}
	return gpu
}

// memo caches f(n) for n below the limit.
func (s *Model) memo(tab *[]float64, n int, f func(int) float64) float64 {
	if n <= 0 {
		return 0
	}
	if n >= s.memoLimit {
		return f(n)
	}
	if len(*tab) <= n {
		grow := max(n+1, 2*len(*tab), 64)
		t := make([]float64, min(grow, s.memoLimit))
		copy(t, *tab)
		for i := len(*tab); i < len(t); i++ {
			t[i] = math.NaN()
		}
		*tab = t
	}
	if v := (*tab)[n]; !math.IsNaN(v) {
		return v
	}
	v := f(n)
	(*tab)[n] = v
	return v
}

// Predict returns the step's predicted times by op kind.
func (s *Model) Predict(b *models.Batch) Breakdown {
	var out Breakdown
	if b.Tokens() == 0 {
		return out
	}
	for _, k := range s.Explain(b) {
		out.Ops[k.Op] += k.Sec
		out.GPU += k.Sec
	}
	out.CPU = s.CPUTime(b)
	out.Total = s.total(out.GPU, out.CPU)
	return out
}
