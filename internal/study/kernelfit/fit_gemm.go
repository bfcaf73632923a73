package kernelfit

import (
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// The GEMM kernel structures the fit chooses among per format, by the loss
// on the fit half: the row tile m is padded to, and the output-tile width
// of the wave model (0: none). cuBLAS and CUTLASS pick tiles per shape;
// the choice that predicts a format's table best stands for them.
var (
	gemmTiles     = []float64{1, 64, 128, 256}
	gemmWaveTiles = []float64{0, 64, 128}
)

// eagerFormats are the GEMM formats whose table rows were timed without a
// CUDA graph (AIConfigurator's fp8_block collector runs DeepGEMM eagerly):
// their rows include the host launch floor.
var eagerFormats = map[string]bool{steptime.FormatFP8Block: true}

// GEMM fit sampling: the structures are screened on every
// gemmScreenEvery-th fit point, the chosen one refitted on every
// gemmFitEvery-th (neighbouring m of a site carry the same information).
const (
	gemmScreenEvery = 40
	gemmFitEvery    = 6
)

func quantisesFormat(f string) bool {
	switch f {
	case steptime.FormatFP8, steptime.FormatFP8Block, steptime.FormatNVFP4, "int8":
		return true
	}
	return false
}

// weightCopies is how many weight buffers the collector cycles through
// per format (kernel-tables.md: 6 for bf16 and fp8, one otherwise).
func weightCopies(f string) int {
	switch f {
	case steptime.FormatBF16, steptime.FormatFP8:
		return 6
	}
	return 1
}

// gemmPredict is the time the table measured for a GEMM: the formula with
// the benchmark's warm L2, and for an eagerly timed format at least its
// launch floor.
func gemmPredict(p *steptime.Profile, hw steptime.Hardware, f string, pt steptime.GEMMPoint) float64 {
	t, _ := steptime.FormulaGEMMWarm(p, hw, f, pt.M, pt.N, pt.K, weightCopies(f))
	if eagerFormats[f] {
		t = math.Max(t, p.GEMM[f].EagerFloorUS*1e-6)
	}
	return t
}

func fitGEMM(db *steptime.KernelDB, hw steptime.Hardware, p *steptime.Profile, res *Result) error {
	if p.GEMM == nil {
		p.GEMM = map[string]steptime.GEMMCoeffs{}
	}
	for _, f := range db.GEMMFormats() {
		var wide, narrow []steptime.GEMMPoint
		for _, pt := range db.GEMMPoints(f) {
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
		p.GEMM[f] = fitGEMMFormat(hw, p, f, fit)
		predict := func(pt steptime.GEMMPoint) float64 { return gemmPredict(p, hw, f, pt) }
		sec := func(pt steptime.GEMMPoint) float64 { return pt.Sec }
		_, narrowHold := splitGEMM(narrow)
		res.Errors = append(res.Errors, errorsOf("gemm", f, ScopeHeldOut, hold, predict, sec),
			errorsOf("gemm", f, fmt.Sprintf("held-out, n or k < %d", MinGEMMDim), narrowHold, predict, sec))
	}
	if _, ok := p.GEMM[steptime.FormatBF16]; !ok {
		return fmt.Errorf("kernel db %s has no bf16 GEMM table", db.System)
	}
	return nil
}

// fitGEMMFormat fits one format's coefficients on its fit points.
func fitGEMMFormat(hw steptime.Hardware, p *steptime.Profile, f string, fit []steptime.GEMMPoint) steptime.GEMMCoeffs {
	quant, eager := quantisesFormat(f), eagerFormats[f]
	// An eager table's small-m rows are all launch floor: the graph-replay
	// overhead is the per-tensor fp8 kernel's, fitted before it.
	fixedOverhead := -1.0
	if c, ok := p.GEMM[steptime.FormatFP8]; eager && ok && f != steptime.FormatFP8 {
		fixedOverhead = c.OverheadUS
	}
	params := []Param{{"efficiency", 0.05, 1, 0}, {"half_tokens", 0, 4096, 1}, {"bandwidth_efficiency", 0.05, 1, 0},
		{"overhead_us", 0, 200, 1}, {"sharpness", 1, 32, 0}}
	x0 := []float64{0.75, 32, 0.8, 4, 3}
	if quant {
		params = append(params, Param{"quant_bandwidth_efficiency", 0.01, 16, 0}, Param{"unaligned_us", 0, 100, 1})
		x0 = append(x0, 0.5, 1)
	}
	if eager {
		params = append(params, Param{"eager_floor_us", 0, 500, 1})
		x0 = append(x0, 15)
	}
	params = append(params, Param{"cache_mb", 0, 1024, 1}, Param{"cache_speedup", 1, 8, 0})
	x0 = append(x0, 64, 1.5)
	coeffs := func(x []float64, tile, wave float64) steptime.GEMMCoeffs {
		c := steptime.GEMMCoeffs{Efficiency: x[0], HalfTokens: x[1], BandwidthEfficiency: x[2], OverheadUS: x[3], Sharpness: x[4],
			TileTokens: tile, WaveTileN: wave}
		i := 5
		if quant {
			c.QuantBandwidthEfficiency, c.UnalignedUS = x[i], x[i+1]
			i += 2
		}
		if eager {
			c.EagerFloorUS = x[i]
			i++
		}
		c.CacheMB, c.CacheSpeedup = x[i], x[i+1]
		if fixedOverhead >= 0 {
			c.OverheadUS = fixedOverhead
		}
		return c
	}
	q := p.Clone()
	run := func(pts []steptime.GEMMPoint, tile, wave float64, x0 []float64) ([]float64, float64) {
		return fitPoints(pts, params, x0, func(x []float64) { q.GEMM[f] = coeffs(x, tile, wave) },
			func(pt steptime.GEMMPoint) float64 { return gemmPredict(&q, hw, f, pt) }, func(pt steptime.GEMMPoint) float64 { return pt.Sec })
	}
	screen := every(fit, gemmScreenEvery)
	bestTile, bestWave, bestL := 1.0, 0.0, math.Inf(1)
	bestX := x0
	for _, tile := range gemmTiles {
		for _, wave := range gemmWaveTiles {
			x, l := run(screen, tile, wave, bestX)
			if l < bestL-1e-9 {
				bestTile, bestWave, bestL, bestX = tile, wave, l, x
			}
		}
	}
	x, _ := run(every(fit, gemmFitEvery), bestTile, bestWave, bestX)
	return roundGEMM(coeffs(x, bestTile, bestWave))
}

func roundGEMM(c steptime.GEMMCoeffs) steptime.GEMMCoeffs {
	return steptime.GEMMCoeffs{Efficiency: round4(c.Efficiency), HalfTokens: round4(c.HalfTokens), TileTokens: c.TileTokens,
		WaveTileN: c.WaveTileN, BandwidthEfficiency: round4(c.BandwidthEfficiency), OverheadUS: round4(c.OverheadUS),
		Sharpness: round4(c.Sharpness), QuantBandwidthEfficiency: round4(c.QuantBandwidthEfficiency), UnalignedUS: round4(c.UnalignedUS),
		EagerFloorUS: round4(c.EagerFloorUS), CacheMB: round4(c.CacheMB), CacheSpeedup: round4(c.CacheSpeedup)}
}
