package steptime

import (
	"fmt"
	"math"
	"sort"
)

// Kernel formats: the weight (and activation) formats of the measured GEMM
// and fused-MoE kernels, named as in AIConfigurator's perf database.
const (
	FormatBF16     = "bf16"      // bfloat16 weights and activations
	FormatFP8      = "fp8"       // per-tensor E4M3 W8A8
	FormatFP8Block = "fp8_block" // 128×128 weight blocks, per-token-group activation scales (DeepSeek/Qwen FP8)
	FormatNVFP4    = "nvfp4"     // W4A4, an fp8 scale per 16 elements (SM100+)
	FormatINT4     = "int4_wo"   // weight-only int4 (GPTQ/AWQ; Marlin)
	FormatMXFP4    = "mxfp4"     // weight-only MX FP4 (gpt-oss experts)
)

// MoE routing distributions of the measured fused-MoE rows: balanced
// (round robin) or power-law loads, where a row times the most loaded
// expert-parallel rank.
const (
	RoutingBalanced  = "balanced"
	RoutingPowerLaw  = "power_law_1.2"
	RoutingPowerLaw1 = "power_law_1.01"
	// RoutingRandom is not a measured distribution: every token picks its
	// top-k experts uniformly at random, as a benchmark's random-token
	// prompts load a trained router (vllm bench serve --dataset-name
	// random, InferenceX's benchmark_serving). Its loads are binomial
	// (MoELoads); the table backend reads the balanced rows of the shape
	// and carries their utilisation to these loads.
	RoutingRandom = "random"
)

// Routings are the routing distributions a step can be priced with.
var Routings = []string{RoutingBalanced, RoutingPowerLaw, RoutingPowerLaw1, RoutingRandom}

// measuredRouting is the measured distribution whose rows stand for r:
// r itself, or the balanced rows for random routing.
func measuredRouting(r string) string {
	if r == RoutingRandom {
		return RoutingBalanced
	}
	return r
}

// KernelDB holds one GPU system's measured kernel latencies (seconds): the
// shape of AIConfigurator's perf database, one row per kernel call measured
// in isolation inside vLLM. Build it with the Add methods and Finish; the
// step-time model reads it through the Lookup methods, which interpolate
// between measured shapes and say when a shape is not covered.
type KernelDB struct {
	// System names the measured system (h100_sxm, b200_sxm …).
	System string
	// Source says where the measurements come from.
	Source string

	gemm      map[string]*gemmTable
	context   map[AttentionKey]*grid2
	decode    map[AttentionKey]*grid2
	moe       map[MoEKey]*Curve
	allReduce map[commKey]*Curve      // vLLM's tensor-parallel all-reduce, by GPUs and graph/eager
	nccl      map[commKey]*Curve      // NCCL collectives, by op and GPUs
	mla       map[[2]string]*mlaTable // MLA modules, by context|generation and KV type/projection format

	finished bool

	// Sibling is the family's other measured GPU (H200 for an H100 …):
	// where this database lacks a configuration, the sibling's measured
	// utilisation stands in, on this GPU's peaks. SiblingHW is the
	// sibling's hardware, for its ideal times.
	Sibling   *KernelDB
	SiblingHW Hardware
	// Predecessor is the previous generation's measured GPU
	// (PredecessorSystems) and PredecessorHW its hardware: its fused-MoE
	// utilisation bounds this GPU's MoE time from above.
	Predecessor   *KernelDB
	PredecessorHW Hardware
}

// NewKernelDB returns an empty database for system.
func NewKernelDB(system, source string) *KernelDB {
	return &KernelDB{
		System: system, Source: source,
		gemm:      map[string]*gemmTable{},
		context:   map[AttentionKey]*grid2{},
		decode:    map[AttentionKey]*grid2{},
		moe:       map[MoEKey]*Curve{},
		allReduce: map[commKey]*Curve{},
		nccl:      map[commKey]*Curve{},
		mla:       map[[2]string]*mlaTable{},
	}
}

// AttentionKey identifies one attention kernel configuration: per-GPU query
// and KV heads, head dimension, KV-cache type and sliding window (0 = full
// attention).
type AttentionKey struct {
	KVDType        string // bf16 | fp8
	HeadDim        int
	Window         int
	Heads, KVHeads int
}

// MoEKey identifies one fused-MoE configuration: full model sizes, the
// expert format, the routing distribution and the rank's share of a
// (moe_tp, moe_ep) split.
type MoEKey struct {
	Format        string
	Routing       string
	Hidden, Inter int
	TopK, Experts int
	TP, EP        int
}

type commKey struct {
	op    string // all_reduce (vLLM) | all_gather | reduce_scatter | all_reduce | alltoall (NCCL)
	gpus  int
	eager bool
}

// gemmTable is one format's GEMM measurements: a curve along m for every
// measured (n, k) site.
type gemmTable struct {
	sites  map[[2]int]*Curve
	ns, ks []int // sorted distinct n and k of the sites
}

// grid2 is a latency grid over (batch, length), each batch a curve along
// length.
type grid2 struct {
	rows    map[int]*Curve
	batches []int
}

// AddGEMM records a GEMM of m×k activations by a k×n weight in format.
func (db *KernelDB) AddGEMM(format string, m, n, k int, sec float64) {
	t := db.gemm[format]
	if t == nil {
		t = &gemmTable{sites: map[[2]int]*Curve{}}
		db.gemm[format] = t
	}
	c := t.sites[[2]int{n, k}]
	if c == nil {
		c = &Curve{}
		t.sites[[2]int{n, k}] = c
	}
	c.add(float64(m), sec)
}

// AddContextAttention records a prefill attention kernel over batch
// identical causal prompts of length isl.
func (db *KernelDB) AddContextAttention(k AttentionKey, batch, isl int, sec float64) {
	addGrid(db.context, k, batch, isl, sec)
}

// AddDecodeAttention records a decode attention kernel: batch sequences
// each attending to kvLen cached tokens.
func (db *KernelDB) AddDecodeAttention(k AttentionKey, batch, kvLen int, sec float64) {
	addGrid(db.decode, k, batch, kvLen, sec)
}

func addGrid[K comparable](m map[K]*grid2, k K, b, x int, sec float64) {
	g := m[k]
	if g == nil {
		g = &grid2{rows: map[int]*Curve{}}
		m[k] = g
	}
	c := g.rows[b]
	if c == nil {
		c = &Curve{}
		g.rows[b] = c
	}
	c.add(float64(x), sec)
}

// AddMoE records a fused-MoE layer over tokens tokens.
func (db *KernelDB) AddMoE(k MoEKey, tokens int, sec float64) {
	c := db.moe[k]
	if c == nil {
		c = &Curve{}
		db.moe[k] = c
	}
	c.add(float64(tokens), sec)
}

// AddAllReduce records vLLM's tensor-parallel all-reduce of bytes per rank
// over gpus GPUs, replayed in a CUDA graph or run eagerly.
func (db *KernelDB) AddAllReduce(gpus int, eager bool, bytes, sec float64) {
	addComm(db.allReduce, commKey{"all_reduce", gpus, eager}, bytes, sec)
}

// AddNCCL records an NCCL collective (all_reduce, all_gather,
// reduce_scatter, alltoall) over gpus GPUs; bytes is the buffer size as
// nccl-tests count it (the whole gathered buffer for all-gather and
// reduce-scatter).
func (db *KernelDB) AddNCCL(op string, gpus int, bytes, sec float64) {
	addComm(db.nccl, commKey{op, gpus, false}, bytes, sec)
}

func addComm(m map[commKey]*Curve, k commKey, bytes, sec float64) {
	c := m[k]
	if c == nil {
		c = &Curve{}
		m[k] = c
	}
	c.add(bytes, sec)
}

// Finish sorts every table; the Add methods must not be called after it.
func (db *KernelDB) Finish() *KernelDB {
	for _, t := range db.gemm {
		ns, ks := map[int]bool{}, map[int]bool{}
		for nk, c := range t.sites {
			c.finish()
			ns[nk[0]], ks[nk[1]] = true, true
		}
		t.ns, t.ks = sortedKeys(ns), sortedKeys(ks)
	}
	for _, m := range []map[AttentionKey]*grid2{db.context, db.decode} {
		for _, g := range m {
			bs := map[int]bool{}
			for b, c := range g.rows {
				c.finish()
				bs[b] = true
			}
			g.batches = sortedKeys(bs)
		}
	}
	for _, c := range db.moe {
		c.finish()
	}
	for _, m := range []map[commKey]*Curve{db.allReduce, db.nccl} {
		for _, c := range m {
			c.finish()
		}
	}
	for _, t := range db.mla {
		t.finish()
	}
	db.finished = true
	return db
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// Size counts the measurements per table, for reports.
func (db *KernelDB) Size() map[string]int {
	out := map[string]int{}
	for f, t := range db.gemm {
		for _, c := range t.sites {
			out["gemm/"+f] += c.Len()
		}
	}
	for _, g := range db.context {
		for _, c := range g.rows {
			out["context_attention"] += c.Len()
		}
	}
	for _, g := range db.decode {
		for _, c := range g.rows {
			out["decode_attention"] += c.Len()
		}
	}
	for _, c := range db.moe {
		out["moe"] += c.Len()
	}
	for _, c := range db.allReduce {
		out["all_reduce"] += c.Len()
	}
	for k, c := range db.nccl {
		out["nccl/"+k.op] += c.Len()
	}
	for k, t := range db.mla {
		for _, g := range t.grids {
			for _, c := range g.rows {
				out["mla_"+k[0]+"_module"] += c.Len()
			}
		}
	}
	return out
}

// GEMMFormats lists the GEMM formats measured.
func (db *KernelDB) GEMMFormats() []string {
	out := make([]string, 0, len(db.gemm))
	for f := range db.gemm {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// Roof is the ideal (speed-of-light) time of an op: the larger of its FLOPs
// at the GPU's peak and its bytes at peak bandwidth. Interpolation between
// measured shapes works on utilisation (ideal over measured time), which
// varies slowly with the shape, rather than on latency, which does not.
type Roof struct {
	FLOPS       float64 // FLOP/s of the op's tensor-core format
	BytesPerSec float64
}

func (r Roof) time(flops, bytes float64) float64 {
	return math.Max(flops/r.FLOPS, bytes/r.BytesPerSec)
}

// GEMMBytes is the device-memory traffic of an m×k by k×n GEMM with wb-byte
// weights and ab-byte activations and a 16-bit output.
func GEMMBytes(m, n, k int, wb, ab float64) float64 {
	fm, fn, fk := float64(m), float64(n), float64(k)
	return fn*fk*wb + fm*fk*ab + fm*fn*2
}

// LookupGEMM returns the measured latency of a GEMM in format, interpolated
// between the measured (n, k) sites on utilisation (bilinear in log n and
// log k) and linearly along m; ok is false when format has no table or
// (n, k) lies more than two octaves from every measured site.
func (db *KernelDB) LookupGEMM(format string, m, n, k int, roof Roof, wb, ab float64) (float64, bool) {
	t := db.gemm[format]
	if t == nil || m < 1 || n < 1 || k < 1 {
		return 0, false
	}
	if c := t.sites[[2]int{n, k}]; c != nil {
		return gemmAt(c, m, n, k, roof, wb, ab), true
	}
	n0, n1, wn := bracketInts(t.ns, n)
	k0, k1, wk := bracketInts(t.ks, k)
	if math.Abs(math.Log2(float64(n)/float64(clampInt(n, t.ns)))) > 2 ||
		math.Abs(math.Log2(float64(k)/float64(clampInt(k, t.ks)))) > 2 {
		return 0, false
	}
	ideal := roof.time(2*float64(m)*float64(n)*float64(k), GEMMBytes(m, n, k, wb, ab))
	var util, wsum float64
	for _, corner := range [4]struct {
		n, k int
		w    float64
	}{{n0, k0, (1 - wn) * (1 - wk)}, {n1, k0, wn * (1 - wk)}, {n0, k1, (1 - wn) * wk}, {n1, k1, wn * wk}} {
		if corner.w == 0 {
			continue
		}
		c := t.sites[[2]int{corner.n, corner.k}]
		if c == nil {
			continue
		}
		lat := gemmAt(c, m, corner.n, corner.k, roof, wb, ab)
		u := roof.time(2*float64(m)*float64(corner.n)*float64(corner.k), GEMMBytes(m, corner.n, corner.k, wb, ab)) / lat
		util += corner.w * u
		wsum += corner.w
	}
	if wsum == 0 || !(util > 0) {
		return 0, false
	}
	return ideal / (util / wsum), true
}

// gemmAt is one site's latency at m: linear in m inside the measured range
// (the x vs x+1 wave steps survive), utilisation held beyond it.
func gemmAt(c *Curve, m, n, k int, roof Roof, wb, ab float64) float64 {
	return c.At(float64(m), func(x float64) float64 {
		mm := int(x)
		return roof.time(2*x*float64(n)*float64(k), GEMMBytes(mm, n, k, wb, ab))
	})
}

// bracketInts returns the grid values around v (equal when v is on the grid
// or outside it) and v's log-scale weight towards the upper one.
func bracketInts(grid []int, v int) (lo, hi int, w float64) {
	if len(grid) == 0 {
		return v, v, 0
	}
	j := sort.SearchInts(grid, v)
	switch {
	case j < len(grid) && grid[j] == v:
		return v, v, 0
	case j == 0:
		return grid[0], grid[0], 0
	case j == len(grid):
		return grid[j-1], grid[j-1], 0
	}
	lo, hi = grid[j-1], grid[j]
	w = math.Log(float64(v)/float64(lo)) / math.Log(float64(hi)/float64(lo))
	return lo, hi, w
}

func clampInt(v int, grid []int) int {
	if len(grid) == 0 {
		return v
	}
	return min(max(v, grid[0]), grid[len(grid)-1])
}

// String describes the database in one line.
func (db *KernelDB) String() string {
	return fmt.Sprintf("%s (%s)", db.System, db.Source)
}

// GEMMPoint is one measured GEMM.
type GEMMPoint struct {
	Format  string
	M, N, K int
	Sec     float64
}

// GEMMPoints lists the measured GEMMs of format in a stable order (n, k,
// then m).
func (db *KernelDB) GEMMPoints(format string) []GEMMPoint {
	t := db.gemm[format]
	if t == nil {
		return nil
	}
	var out []GEMMPoint
	for _, n := range t.ns {
		for _, k := range t.ks {
			c := t.sites[[2]int{n, k}]
			if c == nil {
				continue
			}
			for i, m := range c.X {
				out = append(out, GEMMPoint{format, int(m), n, k, c.Y[i]})
			}
		}
	}
	return out
}

// AttentionPoint is one measured attention kernel: batch sequences of
// length Len (prefill: prompt length; decode: KV length).
type AttentionPoint struct {
	Key        AttentionKey
	Batch, Len int
	Sec        float64
}

// AttentionPoints lists the measured prefill (context) or decode
// attention kernels in a stable order.
func (db *KernelDB) AttentionPoints(context bool) []AttentionPoint {
	m := db.decode
	if context {
		m = db.context
	}
	keys := make([]AttentionKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		switch {
		case a.KVDType != b.KVDType:
			return a.KVDType < b.KVDType
		case a.HeadDim != b.HeadDim:
			return a.HeadDim < b.HeadDim
		case a.Window != b.Window:
			return a.Window < b.Window
		case a.Heads != b.Heads:
			return a.Heads < b.Heads
		}
		return a.KVHeads < b.KVHeads
	})
	var out []AttentionPoint
	for _, k := range keys {
		g := m[k]
		for _, b := range g.batches {
			c := g.rows[b]
			for i, x := range c.X {
				out = append(out, AttentionPoint{k, b, int(x), c.Y[i]})
			}
		}
	}
	return out
}

// MoEPoint is one measured fused-MoE layer.
type MoEPoint struct {
	Key    MoEKey
	Tokens int
	Sec    float64
}

// MoEPoints lists the measured fused-MoE layers in a stable order.
func (db *KernelDB) MoEPoints() []MoEPoint {
	var out []MoEPoint
	for _, k := range db.MoEConfigs() {
		c := db.moe[k]
		for i, x := range c.X {
			out = append(out, MoEPoint{k, int(x), c.Y[i]})
		}
	}
	return out
}

// CommPoint is one measured collective: Op is all_reduce for vLLM's
// tensor-parallel all-reduce (Eager or graph-replayed), or the NCCL
// collective's name with NCCL set.
type CommPoint struct {
	Op          string
	NCCL, Eager bool
	GPUs        int
	Bytes, Sec  float64
}

// CommPoints lists the measured collectives in a stable order.
func (db *KernelDB) CommPoints() []CommPoint {
	var out []CommPoint
	for _, src := range []struct {
		m    map[commKey]*Curve
		nccl bool
	}{{db.allReduce, false}, {db.nccl, true}} {
		keys := make([]commKey, 0, len(src.m))
		for k := range src.m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			switch {
			case a.op != b.op:
				return a.op < b.op
			case a.gpus != b.gpus:
				return a.gpus < b.gpus
			}
			return !a.eager && b.eager
		})
		for _, k := range keys {
			c := src.m[k]
			for i, x := range c.X {
				out = append(out, CommPoint{k.op, src.nccl, k.eager, k.gpus, x, c.Y[i]})
			}
		}
	}
	return out
}
