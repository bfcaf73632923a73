package steptime

import (
	"math"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// Model predicts step times for one model served at one precision and
// tensor-parallel degree on one GPU type.
type Model struct {
	cost  *models.CostModel
	prof  Profile
	tp    int
	async bool

	gemmPeak float64 // FLOP/s of the linear layers' dtype
	attnPeak float64 // FLOP/s of attention (activation dtype)
	bw       float64 // bytes/s device memory
	linkBW   float64 // bytes/s one way over the scale-up link, after efficiency

	graphTokens int // steps of up to this many tokens replay a CUDA graph
}

// New builds a step-time model. async says whether the engine overlaps
// CPU scheduling with GPU execution (vLLM --async-scheduling).
func New(m *models.Model, g *hardware.GPU, p models.Precision, tp int, prof Profile, async bool) (*Model, error) {
	if err := prof.Validate(); err != nil {
		return nil, err
	}
	tp = max(tp, 1)
	s := &Model{
		cost: m.NewCostModel(p, tp), prof: prof, tp: tp, async: async,
		gemmPeak: g.PeakTFLOPS(p.PeakDType()) * 1e12,
		attnPeak: g.PeakTFLOPS(p.Activations) * 1e12,
		bw:       g.HBMBandwidthGBps * 1e9,
		linkBW:   g.ScaleUp.UnidirectionalGBps() * 1e9 * prof.LinkEfficiency,
	}
	if g.ScaleUp.BandwidthGBps <= 0 || g.ScaleUp.Kind == "none" {
		s.linkBW = g.PCIe.UnidirectionalGBps() * 1e9 * prof.LinkEfficiency
	}
	return s, nil
}

// Profile returns the coefficients in use.
func (s *Model) Profile() Profile { return s.prof }

// Cost is the underlying FLOPs/bytes model.
func (s *Model) Cost() *models.CostModel { return s.cost }

// Breakdown is a predicted step, in seconds.
type Breakdown struct {
	Ops [models.NumOpKinds]float64
	GPU float64
	CPU float64
	// Total is the step's wall time: GPU plus the CPU time not hidden
	// behind it.
	Total float64
}

// gemmEfficiency is the fraction of peak a GEMM with m rows reaches.
func (s *Model) gemmEfficiency(m int) float64 {
	fm := float64(max(m, 1))
	return s.prof.GEMMEfficiency * fm / (fm + s.prof.GEMMHalfTokens)
}

// customAllReduceMaxBytes is vLLM's custom all-reduce limit (8 MiB);
// larger messages go through NCCL.
const customAllReduceMaxBytes = 8 << 20

// WithExpertParallel spreads the routed experts over an expert-parallel
// group of ep GPUs (ep = tp × data-parallel ranks; 1 = off).
func (s *Model) WithExpertParallel(ep int) *Model {
	s.cost = s.cost.Model().NewCostModelEP(s.cost.Precision(), s.tp, ep)
	return s
}

// WithCUDAGraphs makes steps of up to maxTokens tokens use the graph
// overheads (vLLM replays captured graphs for batches up to
// max_cudagraph_capture_size); 0 turns graphs off.
func (s *Model) WithCUDAGraphs(maxTokens int) *Model {
	s.graphTokens = maxTokens
	return s
}

// CUDAGraphTokens is vLLM's largest captured batch: min(2 ×
// max_num_seqs, 512), and no more than the token budget.
func CUDAGraphTokens(maxNumSeqs, maxBatchedTokens int) int {
	return min(2*maxNumSeqs, 512, maxBatchedTokens)
}

// OpTime is the predicted time of one op's cost in an eagerly executed
// step, in seconds.
func (s *Model) OpTime(k models.OpKind, c models.OpCost) float64 { return s.opTime(k, c, false) }

func (s *Model) overheads(graph bool) (kernel, attention float64) {
	p := &s.prof
	kernel, attention = p.KernelOverheadUS, p.AttentionKernelOverheadUS
	if attention <= 0 {
		attention = kernel
	}
	if graph {
		if p.GraphKernelOverheadUS > 0 {
			kernel = p.GraphKernelOverheadUS
		}
		if p.GraphAttentionKernelOverheadUS > 0 {
			attention = p.GraphAttentionKernelOverheadUS
		}
	}
	return kernel * 1e-6, attention * 1e-6
}

func (s *Model) opTime(k models.OpKind, c models.OpCost, graph bool) float64 {
	if c.Count == 0 && c.FLOPs == 0 && c.Bytes() == 0 {
		return 0
	}
	p := &s.prof
	kernel, attention := s.overheads(graph)
	launch := float64(c.Count) * kernel
	mem := c.Bytes() / (s.bw * p.BandwidthEfficiency)
	switch {
	case k == models.OpExperts && p.ExpertBandwidthEfficiency > 0:
		emem := c.Bytes() / (s.bw * p.ExpertBandwidthEfficiency)
		return math.Max(c.FLOPs/(s.gemmPeak*s.gemmEfficiency(c.Tokens)), emem) + launch
	case k.IsGEMM():
		return math.Max(c.FLOPs/(s.gemmPeak*s.gemmEfficiency(c.Tokens)), mem) + launch
	case k == models.OpAttnPrefill:
		return math.Max(c.FLOPs/(s.attnPeak*p.AttentionPrefillEfficiency), mem) + float64(c.Count)*attention
	case k == models.OpAttnDecode:
		dmem := c.Bytes() / (s.bw * p.AttentionDecodeEfficiency)
		return math.Max(c.FLOPs/(s.attnPeak*p.AttentionPrefillEfficiency), dmem) + float64(c.Count)*attention
	case k == models.OpElementwise:
		eff := p.BandwidthEfficiency
		if p.ElementwiseBandwidthEfficiency > 0 {
			eff = p.ElementwiseBandwidthEfficiency
		}
		return c.Bytes()/(s.bw*eff) + launch
	case k == models.OpAllToAll:
		return float64(c.Count)*p.AllReduceLatencyUS*1e-6 + c.DataBytes/s.linkBW
	case k == models.OpAllReduce:
		if s.tp <= 1 {
			return 0
		}
		// Ring all-reduce: each rank sends and receives 2(n-1)/n of the data.
		ring := 2 * float64(s.tp-1) / float64(s.tp)
		latency := p.AllReduceLatencyUS
		if p.CustomAllReduceLatencyUS > 0 && c.Count > 0 && c.DataBytes/float64(c.Count) <= customAllReduceMaxBytes {
			latency = p.CustomAllReduceLatencyUS
		}
		return float64(c.Count)*latency*1e-6 + ring*c.DataBytes/s.linkBW
	}
	return mem + launch
}

// CPUTime is the engine's CPU time for a step with the given shape.
func (s *Model) CPUTime(b *models.Batch) float64 {
	p := &s.prof
	seqs := float64(b.DecodeSeqs + b.PrefillChunks)
	return (p.StepOverheadUS + p.PerSeqOverheadUS*seqs + p.PerPrefillOverheadUS*float64(b.PrefillChunks)) * 1e-6
}

// Predict returns the step's predicted times.
func (s *Model) Predict(b *models.Batch) Breakdown {
	var out Breakdown
	if b.Tokens() == 0 {
		return out
	}
	cost := s.cost.Step(b)
	graph := b.Tokens() <= s.graphTokens
	for k := models.OpKind(0); k < models.NumOpKinds; k++ {
		t := s.opTime(k, cost[k], graph)
		out.Ops[k] = t
		out.GPU += t
	}
	out.CPU = s.CPUTime(b)
	out.Total = out.GPU + out.CPU
	if s.async {
		out.Total -= math.Min(out.CPU*s.prof.AsyncOverlap, out.GPU)
	}
	return out
}

// StepTime is Predict(b).Total.
func (s *Model) StepTime(b *models.Batch) float64 { return s.Predict(b).Total }
