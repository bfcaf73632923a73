package kernels

import (
	"fmt"
	"math"
	"sort"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// ProfileFunc gives the coefficients to predict a GPU's points with.
type ProfileFunc func(gpu *hardware.GPU) steptime.Profile

// GPUs looks catalog GPUs up by id.
type GPUs map[string]*hardware.GPU

// stub is the model steptime.New is built with when only OpTime is used
// (OpTime depends on the GPU, the profile and TP, not on the model).
var stub = &models.Model{ID: "stub", DType: hardware.FP16, NumLayers: 1, HiddenSize: 128,
	IntermediateSize: 256, NumHeads: 1, NumKVHeads: 1, HeadDim: 128, VocabSize: 128, MaxPositions: 128}

// Predict returns the model's time for every point, in seconds.
func Predict(pts []Point, gpus GPUs, prof ProfileFunc) ([]float64, error) {
	type key struct {
		gpu string
		tp  int
	}
	sms := map[key]*steptime.Model{}
	profs := map[string]steptime.Profile{}
	out := make([]float64, len(pts))
	for i := range pts {
		p := &pts[i]
		k := key{p.GPU, max(p.TP, 1)}
		sm := sms[k]
		if sm == nil {
			g := gpus[p.GPU]
			if g == nil {
				return nil, fmt.Errorf("unknown GPU %q", p.GPU)
			}
			pr, ok := profs[p.GPU]
			if !ok {
				pr = prof(g)
				profs[p.GPU] = pr
			}
			var err error
			if sm, err = steptime.New(stub, g, fp16, k.tp, pr, false); err != nil {
				return nil, err
			}
			sms[k] = sm
		}
		out[i] = sm.OpTime(p.Kind, p.Cost)
	}
	return out, nil
}

// Stats summarises the relative errors pred/measured − 1 of a set of
// points.
type Stats struct {
	N int
	// MedianAPE and P90APE are the median and 90th percentile of the
	// absolute percentage error |pred/measured − 1|, in percent.
	MedianAPE, P90APE float64
	// Bias is the median signed error in percent: positive means the model
	// predicts too slow.
	Bias float64
}

// Summarize computes Stats over the points selected by idx (all when nil).
func Summarize(pred []float64, pts []Point, idx []int) Stats {
	if idx == nil {
		idx = make([]int, len(pts))
		for i := range idx {
			idx[i] = i
		}
	}
	ape := make([]float64, 0, len(idx))
	sgn := make([]float64, 0, len(idx))
	for _, i := range idx {
		e := pred[i]/pts[i].Measured - 1
		ape = append(ape, math.Abs(e)*100)
		sgn = append(sgn, e*100)
	}
	return Stats{N: len(idx), MedianAPE: quantile(ape, 0.5), P90APE: quantile(ape, 0.9), Bias: quantile(sgn, 0.5)}
}

// quantile is the q-quantile by linear interpolation between order
// statistics (type 7); NaN for an empty sample.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// Loss is the weighted mean absolute log error Σ w·|ln(pred/measured)| / Σ w
// over the points selected by idx: the fit's objective. The logarithm
// treats over- and under-prediction alike and the absolute value keeps a
// few noisy kernels from steering the fit.
func Loss(pred []float64, pts []Point, idx []int) float64 {
	var s, w float64
	for _, i := range idx {
		if !(pred[i] > 0) {
			return math.Inf(1)
		}
		s += pts[i].Weight * math.Abs(math.Log(pred[i]/pts[i].Measured))
		w += pts[i].Weight
	}
	if w == 0 {
		return 0
	}
	return s / w
}
