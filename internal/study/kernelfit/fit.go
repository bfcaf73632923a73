package kernelfit

import (
	"fmt"
	"math"
	"sort"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// MinGEMMDim is the smallest n and k of the GEMM sites the fit uses and
// the accuracy bars judge: every projection of a decoder at TP ≤ 8 is at
// least this wide (the narrowest, gpt-oss's fused QKV at TP8, is 640).
// Smaller sites, dominated by launch and tail effects, are reported apart.
const MinGEMMDim = 256

// Routing is the measured MoE routing distribution the fused-MoE formula
// is fitted to, the table backend's default too.
const Routing = steptime.RoutingPowerLaw

// Result is one GPU's fit: the profile and the held-out errors.
type Result struct {
	System  string
	GPU     string
	Profile steptime.Profile
	Errors  []ErrorRow
}

// ErrorRow is the error of the fitted formula on one op group's
// held-out points.
type ErrorRow struct {
	Op     string // gemm, context_attention, decode_attention, moe, all_reduce, nccl
	Format string // kernel format, KV dtype, routing or collective
	// Scope says which points: "held-out" (judged), or a note such as
	// "held-out, n or k < 256".
	Scope     string
	N         int
	MedianAPE float64 // %
	P90APE    float64 // %
	Bias      float64 // signed median, % (positive: predicted too slow)
}

// Fit fits every coefficient of base the tables of db determine, for GPU
// g, and returns the fitted profile with its held-out errors. Coefficients
// no table determines (CPU costs) keep base's values.
func Fit(db *steptime.KernelDB, g *hardware.GPU, base steptime.Profile) (*Result, error) {
	hw := steptime.NewHardware(g)
	p := base.Clone()
	p.Scale = steptime.Scales{}
	res := &Result{System: db.System, GPU: g.ID}
	if err := fitGEMM(db, hw, &p, res); err != nil {
		return nil, err
	}
	fitAttention(db, hw, &p, res)
	fitMoE(db, hw, &p, res)
	fitComm(db, hw, &p, res)
	p.Source = fmt.Sprintf("fitted to measured kernels: %s", db.System)
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("fitted profile: %w", err)
	}
	res.Profile = p
	return res, nil
}

func summarize(op, format, scope string, pred, meas []float64) ErrorRow {
	r := ErrorRow{Op: op, Format: format, Scope: scope, N: len(pred)}
	if len(pred) == 0 {
		return r
	}
	ape := make([]float64, len(pred))
	signed := make([]float64, len(pred))
	for i := range pred {
		signed[i] = 100 * (pred[i]/meas[i] - 1)
		ape[i] = math.Abs(signed[i])
	}
	r.MedianAPE, r.P90APE, r.Bias = quantile(ape, 0.5), quantile(ape, 0.9), quantile(signed, 0.5)
	return r
}

func quantile(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[i]
	}
	f := pos - float64(i)
	return s[i]*(1-f) + s[i+1]*f
}

// gemmTiles are the tile heights tried for a format (1: no padding).
var gemmTiles = []float64{1, 64, 128, 256}

func fitGEMM(db *steptime.KernelDB, hw steptime.Hardware, p *steptime.Profile, res *Result) error {
	if p.GEMM == nil {
		p.GEMM = map[string]steptime.GEMMCoeffs{}
	}
	for _, f := range db.GEMMFormats() {
		all := db.GEMMPoints(f)
		var wide, narrow []steptime.GEMMPoint
		for _, pt := range all {
			if pt.N >= MinGEMMDim && pt.K >= MinGEMMDim {
				wide = append(wide, pt)
			} else {
				narrow = append(narrow, pt)
			}
		}
		fit, hold := splitGEMM(wide)
		if len(fit) == 0 {
			continue
		}
		// Every other m of the fit sites: the formula has seven
		// coefficients, and the neighbouring m carry the same information.
		var thin []steptime.GEMMPoint
		for i, pt := range fit {
			if i%2 == 0 {
				thin = append(thin, pt)
			}
		}
		meas := make([]float64, len(thin))
		for i, pt := range thin {
			meas[i] = pt.Sec
		}
		q := *p
		q.GEMM = map[string]steptime.GEMMCoeffs{}
		pred := make([]float64, len(thin))
		params := []Param{
			{"efficiency", 0.05, 1, 0}, {"half_tokens", 0, 4096, 1}, {"bandwidth_efficiency", 0.05, 1, 0},
			{"overhead_us", 0, 200, 1}, {"sharpness", 1, 32, 0}, {"quant_bandwidth_efficiency", 0.01, 16, 0}, {"unaligned_us", 0, 100, 1},
		}
		coeffs := func(x []float64, tile float64) steptime.GEMMCoeffs {
			c := steptime.GEMMCoeffs{Efficiency: x[0], HalfTokens: x[1], BandwidthEfficiency: x[2], OverheadUS: x[3], Sharpness: x[4], TileTokens: tile}
			if quantisesFormat(f) {
				c.QuantBandwidthEfficiency, c.UnalignedUS = x[5], x[6]
			}
			return c
		}
		var best steptime.GEMMCoeffs
		bestL := math.Inf(1)
		x0 := []float64{0.75, 64, 0.8, 4, 3, 0.5, 1}
		for _, tile := range gemmTiles {
			loss := func(x []float64) float64 {
				q.GEMM[f] = coeffs(x, tile)
				for i, pt := range thin {
					pred[i], _ = steptime.FormulaGEMM(&q, hw, f, pt.M, pt.N, pt.K)
				}
				return logLoss(pred, meas)
			}
			x, l := Minimize(params, x0, loss)
			if l < bestL-1e-9 {
				best, bestL = coeffs(x, tile), l
			}
		}
		p.GEMM[f] = roundGEMM(best)
		res.Errors = append(res.Errors, gemmErrors(p, hw, f, "held-out", hold), gemmErrors(p, hw, f, fmt.Sprintf("held-out, n or k < %d", MinGEMMDim), splitHalf(narrow)))
	}
	if _, ok := p.GEMM[steptime.FormatBF16]; !ok {
		return fmt.Errorf("kernel db %s has no bf16 GEMM table", db.System)
	}
	return nil
}

func splitHalf(pts []steptime.GEMMPoint) []steptime.GEMMPoint {
	_, hold := splitGEMM(pts)
	return hold
}

func quantisesFormat(f string) bool {
	switch f {
	case steptime.FormatFP8, steptime.FormatFP8Block, steptime.FormatNVFP4, "int8":
		return true
	}
	return false
}

func gemmErrors(p *steptime.Profile, hw steptime.Hardware, f, scope string, pts []steptime.GEMMPoint) ErrorRow {
	pred, meas := make([]float64, len(pts)), make([]float64, len(pts))
	for i, pt := range pts {
		pred[i], _ = steptime.FormulaGEMM(p, hw, f, pt.M, pt.N, pt.K)
		meas[i] = pt.Sec
	}
	return summarize("gemm", f, scope, pred, meas)
}

// round4 keeps four significant digits: fitted coefficients are stored
// and documented at that precision, so a refit on another machine gives
// the same file.
func round4(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	e := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*e) / e
}

func roundGEMM(c steptime.GEMMCoeffs) steptime.GEMMCoeffs {
	return steptime.GEMMCoeffs{Efficiency: round4(c.Efficiency), HalfTokens: round4(c.HalfTokens), TileTokens: c.TileTokens,
		BandwidthEfficiency: round4(c.BandwidthEfficiency), OverheadUS: round4(c.OverheadUS), Sharpness: round4(c.Sharpness),
		QuantBandwidthEfficiency: round4(c.QuantBandwidthEfficiency), UnalignedUS: round4(c.UnalignedUS)}
}

func attentionShape(k steptime.AttentionKey) steptime.AttentionShape {
	kvb := 2.0
	if k.KVDType == "fp8" {
		kvb = 1
	}
	return steptime.AttentionShape{Key: k, KVBytes: kvb}
}

// contextWork is a prefill row's query-key pairs and KV tokens.
func contextWork(pt steptime.AttentionPoint) (pairs, kv float64) {
	b, s := float64(pt.Batch), float64(pt.Len)
	pairs = s * (s + 1) / 2
	if w := float64(pt.Key.Window); w > 0 && s > w {
		pairs = w*(w+1)/2 + (s-w)*w
	}
	return b * pairs, b * s
}

func decodeKV(pt steptime.AttentionPoint) float64 {
	l := float64(pt.Len)
	if w := float64(pt.Key.Window); w > 0 {
		l = math.Min(l, w)
	}
	return float64(pt.Batch) * l
}

func fitAttention(db *steptime.KernelDB, hw steptime.Hardware, p *steptime.Profile, res *Result) {
	ctx := db.AttentionPoints(true)
	if fit, hold := splitAttention(ctx); len(fit) > 0 {
		thin := every(fit, 3)
		predict := func(q *steptime.Profile, pt steptime.AttentionPoint) float64 {
			pairs, kv := contextWork(pt)
			t, _ := steptime.FormulaContextAttention(q, hw, attentionShape(pt.Key), float64(pt.Batch), pairs, kv)
			return t
		}
		params := []Param{{"prefill_efficiency", 0.02, 1, 0}, {"prefill_half_work", 0, 1e12, 1e3}, {"prefill_overhead_us", 0, 500, 1}}
		x := fitGroup(p, thin, params, []float64{0.5, 1e6, 10}, func(q *steptime.Profile, x []float64) {
			q.Attention.PrefillEfficiency, q.Attention.PrefillHalfWork, q.Attention.PrefillOverheadUS = x[0], x[1], x[2]
		}, predict, func(pt steptime.AttentionPoint) float64 { return pt.Sec })
		p.Attention.PrefillEfficiency, p.Attention.PrefillHalfWork, p.Attention.PrefillOverheadUS = round4(x[0]), round4(x[1]), round4(x[2])
		res.Errors = append(res.Errors, attentionErrors(p, "context_attention", hold, predict)...)
	}
	dec := db.AttentionPoints(false)
	if fit, hold := splitAttention(dec); len(fit) > 0 {
		thin := every(fit, 3)
		predict := func(q *steptime.Profile, pt steptime.AttentionPoint) float64 {
			t, _ := steptime.FormulaDecodeAttention(q, hw, attentionShape(pt.Key), float64(pt.Batch), decodeKV(pt))
			return t
		}
		params := []Param{{"decode_bandwidth_efficiency", 0.02, 1, 0}, {"decode_half_batch", 0, 4096, 1}, {"decode_overhead_us", 0, 500, 1}}
		x := fitGroup(p, thin, params, []float64{0.7, 4, 5}, func(q *steptime.Profile, x []float64) {
			q.Attention.DecodeBandwidthEfficiency, q.Attention.DecodeHalfBatch, q.Attention.DecodeOverheadUS = x[0], x[1], x[2]
		}, predict, func(pt steptime.AttentionPoint) float64 { return pt.Sec })
		p.Attention.DecodeBandwidthEfficiency, p.Attention.DecodeHalfBatch, p.Attention.DecodeOverheadUS = round4(x[0]), round4(x[1]), round4(x[2])
		res.Errors = append(res.Errors, attentionErrors(p, "decode_attention", hold, predict)...)
	}
}

func attentionErrors(p *steptime.Profile, op string, hold []steptime.AttentionPoint, predict func(*steptime.Profile, steptime.AttentionPoint) float64) []ErrorRow {
	by := map[string][]steptime.AttentionPoint{}
	for _, pt := range hold {
		by[pt.Key.KVDType] = append(by[pt.Key.KVDType], pt)
	}
	var out []ErrorRow
	for _, kv := range []string{"bf16", "fp8"} {
		pts := by[kv]
		if len(pts) == 0 {
			continue
		}
		pred, meas := make([]float64, len(pts)), make([]float64, len(pts))
		for i, pt := range pts {
			pred[i], meas[i] = predict(p, pt), pt.Sec
		}
		out = append(out, summarize(op, "kv "+kv, "held-out", pred, meas))
	}
	return out
}

func every[T any](xs []T, n int) []T {
	var out []T
	for i, x := range xs {
		if i%n == 0 {
			out = append(out, x)
		}
	}
	return out
}

// fitGroup minimises the log error of predict over pts by the params,
// written into a copy of p by set.
func fitGroup[T any](p *steptime.Profile, pts []T, params []Param, x0 []float64, set func(*steptime.Profile, []float64),
	predict func(*steptime.Profile, T) float64, measured func(T) float64) []float64 {
	q := p.Clone()
	meas := make([]float64, len(pts))
	for i, pt := range pts {
		meas[i] = measured(pt)
	}
	pred := make([]float64, len(pts))
	loss := func(x []float64) float64 {
		set(&q, x)
		for i, pt := range pts {
			pred[i] = predict(&q, pt)
		}
		return logLoss(pred, meas)
	}
	x, _ := Minimize(params, x0, loss)
	return x
}

func fitMoE(db *steptime.KernelDB, hw steptime.Hardware, p *steptime.Profile, res *Result) {
	if p.MoE == nil {
		p.MoE = map[string]steptime.MoECoeffs{}
	}
	byFormat := map[string][]steptime.MoEPoint{}
	for _, pt := range db.MoEPoints() {
		if pt.Key.Routing == Routing {
			byFormat[pt.Key.Format] = append(byFormat[pt.Key.Format], pt)
		}
	}
	formats := make([]string, 0, len(byFormat))
	for f := range byFormat {
		formats = append(formats, f)
	}
	sort.Strings(formats)
	for _, f := range formats {
		fit, hold := splitMoE(byFormat[f])
		if len(fit) == 0 || len(hold) == 0 {
			fit, hold = byFormat[f], byFormat[f]
		}
		predict := func(q *steptime.Profile, pt steptime.MoEPoint) float64 {
			t, _ := steptime.FormulaMoE(q, hw, f, steptime.MoEWorkFor(pt.Key, pt.Tokens))
			return t
		}
		params := []Param{{"efficiency", 0.02, 1, 0}, {"half_tokens", 0, 4096, 1}, {"bandwidth_efficiency", 0.02, 1, 0}, {"overhead_us", 0, 1000, 1}, {"per_token_us", 0, 10, 0.001}}
		x := fitGroup(p, fit, params, []float64{0.5, 32, 0.6, 20, 0.01}, func(q *steptime.Profile, x []float64) {
			q.MoE[f] = steptime.MoECoeffs{Efficiency: x[0], HalfTokens: x[1], BandwidthEfficiency: x[2], OverheadUS: x[3], PerTokenUS: x[4]}
		}, predict, func(pt steptime.MoEPoint) float64 { return pt.Sec })
		p.MoE[f] = steptime.MoECoeffs{Efficiency: round4(x[0]), HalfTokens: round4(x[1]), BandwidthEfficiency: round4(x[2]), OverheadUS: round4(x[3]), PerTokenUS: round4(x[4])}
		pred, meas := make([]float64, len(hold)), make([]float64, len(hold))
		for i, pt := range hold {
			pred[i], meas[i] = predict(p, pt), pt.Sec
		}
		scope := "held-out model shapes"
		if len(fit) == len(hold) && len(byFormat[f]) == len(fit) {
			scope = "in-sample (one model shape)"
		}
		res.Errors = append(res.Errors, summarize("moe", f+" "+Routing, scope, pred, meas))
	}
}

// customLimits are the size limits tried for vLLM's custom all-reduce path.
var customLimits = func() []float64 {
	var out []float64
	for b := 64 << 10; b <= 1<<30; b *= 2 {
		out = append(out, float64(b))
	}
	return out
}()

func fitComm(db *steptime.KernelDB, hw steptime.Hardware, p *steptime.Profile, res *Result) {
	var ar, nccl []steptime.CommPoint
	for _, pt := range db.CommPoints() {
		switch {
		case pt.NCCL && (pt.Op == "all_gather" || pt.Op == "reduce_scatter" || pt.Op == "all_reduce"):
			nccl = append(nccl, pt)
		case !pt.NCCL && !pt.Eager:
			ar = append(ar, pt)
		}
	}
	ncclPredict := func(q *steptime.Profile, pt steptime.CommPoint) float64 {
		t, _ := steptime.FormulaNCCL(q, hw, pt.Op, pt.GPUs, pt.Bytes)
		return t
	}
	if fit, hold := splitComm(nccl); len(fit) > 0 {
		x := fitGroup(p, fit, []Param{{"nccl_latency_us", 0, 1000, 1}, {"nccl_per_gpu_us", 0, 200, 1}, {"nccl_link_efficiency", 0.01, 4, 0}}, []float64{10, 2, 0.7},
			func(q *steptime.Profile, x []float64) {
				q.Comm.NCCLLatencyUS, q.Comm.NCCLPerGPUUS, q.Comm.NCCLLinkEfficiency = x[0], x[1], x[2]
			}, ncclPredict, func(pt steptime.CommPoint) float64 { return pt.Sec })
		p.Comm.NCCLLatencyUS, p.Comm.NCCLPerGPUUS, p.Comm.NCCLLinkEfficiency = round4(x[0]), round4(x[1]), round4(x[2])
		pred, meas := make([]float64, len(hold)), make([]float64, len(hold))
		for i, pt := range hold {
			pred[i], meas[i] = ncclPredict(p, pt), pt.Sec
		}
		res.Errors = append(res.Errors, summarize("nccl", "all_reduce, all_gather, reduce_scatter", "held-out sizes", pred, meas))
	}
	if len(ar) == 0 {
		return
	}
	fit, hold := splitComm(ar)
	arPredict := func(q *steptime.Profile, pt steptime.CommPoint) float64 {
		t, _ := steptime.FormulaAllReduce(q, hw, pt.GPUs, pt.Bytes)
		return t
	}
	measured := func(pt steptime.CommPoint) float64 { return pt.Sec }
	gpus := map[int]bool{}
	for _, pt := range ar {
		gpus[pt.GPUs] = true
	}
	// Custom kernel coefficients on the small messages (every path is
	// the custom one there), then each GPU count's size limit.
	var small []steptime.CommPoint
	for _, pt := range fit {
		if pt.Bytes <= 256<<10 {
			small = append(small, pt)
		}
	}
	p.Comm.CustomAllReduceMaxBytes = 256 << 10
	p.Comm.CustomMaxBytesByGPUs = nil
	setCustom := func(q *steptime.Profile, x []float64) {
		q.Comm.CustomLatencyUS, q.Comm.CustomPerGPUUS, q.Comm.CustomLinkEfficiency = x[0], x[1], x[2]
	}
	x := fitGroup(p, small, []Param{{"custom_latency_us", 0, 1000, 1}, {"custom_per_gpu_us", 0, 200, 1}, {"custom_link_efficiency", 0.01, 4, 0}}, []float64{5, 0.5, 0.5},
		setCustom, arPredict, measured)
	setCustom(p, x)
	limits := map[int]float64{}
	for n := range gpus {
		bestL, bestLoss := 0.0, math.Inf(1)
		var pts []steptime.CommPoint
		for _, pt := range fit {
			if pt.GPUs == n {
				pts = append(pts, pt)
			}
		}
		for _, lim := range customLimits {
			q := p.Clone()
			q.Comm.CustomMaxBytesByGPUs = map[int]float64{n: lim}
			pred, meas := make([]float64, len(pts)), make([]float64, len(pts))
			for i, pt := range pts {
				pred[i], meas[i] = arPredict(&q, pt), pt.Sec
			}
			if l := logLoss(pred, meas); l < bestLoss-1e-9 {
				bestL, bestLoss = lim, l
			}
		}
		limits[n] = bestL
	}
	p.Comm.CustomMaxBytesByGPUs = limits
	// Refit the custom kernel on every message it serves.
	var served []steptime.CommPoint
	for _, pt := range fit {
		if pt.Bytes <= limits[pt.GPUs] {
			served = append(served, pt)
		}
	}
	x = fitGroup(p, served, []Param{{"custom_latency_us", 0, 1000, 1}, {"custom_per_gpu_us", 0, 200, 1}, {"custom_link_efficiency", 0.01, 4, 0}}, x, setCustom, arPredict, measured)
	p.Comm.CustomLatencyUS, p.Comm.CustomPerGPUUS, p.Comm.CustomLinkEfficiency = round4(x[0]), round4(x[1]), round4(x[2])
	p.Comm.CustomAllReduceMaxBytes = 0
	pred, meas := make([]float64, len(hold)), make([]float64, len(hold))
	for i, pt := range hold {
		pred[i], meas[i] = arPredict(p, pt), pt.Sec
	}
	res.Errors = append(res.Errors, summarize("all_reduce", "vLLM tensor-parallel (graph)", "held-out sizes", pred, meas))
}
