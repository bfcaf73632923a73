package calibrate

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Figure is one measured quantile and its prediction.
type Figure struct {
	Metric    string  `json:"metric"`
	Quantile  string  `json:"quantile"`
	Measured  float64 `json:"measured"`
	Predicted float64 `json:"predicted"`
	// APE is the absolute percentage error.
	APE float64 `json:"ape_pct"`
}

// Evaluation is how well a profile predicts one run.
type Evaluation struct {
	Run     string   `json:"run"`
	Figures []Figure `json:"figures"`
	// Loss is the mean squared log-ratio over the figures.
	Loss float64 `json:"loss"`
	// MedianAPE per metric (over its quantiles), and over every P99.
	MedianAPE map[string]float64 `json:"median_ape_pct"`
}

// Evaluate replays run with profile (nil: the GPU's defaults) and compares
// the prediction with the measurement. stage >= 0 compares that
// benchmark's requests only (the whole run is still replayed, as the
// server saw it).
func Evaluate(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, profile *steptime.Profile, stage int) (Evaluation, error) {
	ts := targets(run, stage)
	if len(ts) == 0 {
		return Evaluation{}, fmt.Errorf("%s: no measured latencies to compare", run.Name)
	}
	res, err := replay.Config(run, cat, replay.Options{Profile: profile})
	if err != nil {
		return Evaluation{}, err
	}
	p, err := simulate(ctx, res.Config, stage)
	if err != nil {
		return Evaluation{}, err
	}
	return evaluation(stageName(run, stage), p, ts), nil
}

// stageName names a run or one of its benchmarks.
func stageName(run *measured.Run, stage int) string {
	if stage < 0 {
		return run.Name
	}
	for _, s := range run.Stages {
		if s.Index == stage && s.Strategy != "" {
			return fmt.Sprintf("%s stage %d (%s)", run.Name, stage, s.Strategy)
		}
	}
	return fmt.Sprintf("%s stage %d", run.Name, stage)
}

func evaluation(name string, rep prediction, ts []target) Evaluation {
	e := Evaluation{Run: name, Loss: logLoss(rep, ts), MedianAPE: map[string]float64{}}
	per := map[string][]float64{}
	for _, t := range ts {
		p := predicted(rep, t)
		ape := 100 * math.Abs(p-t.value) / t.value
		e.Figures = append(e.Figures, Figure{Metric: t.metric, Quantile: t.quantile, Measured: t.value, Predicted: p, APE: ape})
		per[t.metric] = append(per[t.metric], ape)
		if t.quantile == "p99" {
			per["p99"] = append(per["p99"], ape)
		}
	}
	for k, v := range per {
		e.MedianAPE[k] = median(v)
	}
	return e
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
