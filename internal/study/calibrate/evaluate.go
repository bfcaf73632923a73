package calibrate

import (
	"context"
	"fmt"
	"math"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
	"github.com/headroom-sim/headroom/internal/study/replay"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/sim/stats"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// Figure is one measured quantile and its prediction.
type Figure struct {
	// Stage is the benchmark the figure belongs to, when an evaluation
	// compares several separately (absent: the whole run).
	Stage     *int    `json:"stage,omitempty"`
	Metric    string  `json:"metric"`
	Quantile  string  `json:"quantile"`
	Measured  float64 `json:"measured"`
	Predicted float64 `json:"predicted"`
	// APE is the absolute percentage error.
	APE float64 `json:"ape_pct"`
}

// Evaluation is how well a profile predicts one run.
type Evaluation struct {
	Run string `json:"run"`
	// Basis says what the figures were measured from (see Result.Basis).
	Basis string `json:"basis"`
	// Parts is how many simulations the evaluation ran (one per benchmark
	// when they were replayed apart).
	Parts   int      `json:"parts"`
	Figures []Figure `json:"figures"`
	// Loss is the mean squared log-ratio over the figures.
	Loss float64 `json:"loss"`
	// MedianAPE per metric (over its quantiles), and over every P99.
	MedianAPE map[string]float64 `json:"median_ape_pct"`
}

// Evaluate replays run with profile (nil: the GPU's defaults) and compares
// the prediction with the measurement, as Fit does (replay.Parts). stage
// >= 0 compares that benchmark only (a run with per-request records is
// still replayed whole, as the server saw it). kdb loads the measured
// kernels of the table backend (nil: the formula backend).
func Evaluate(ctx context.Context, run *measured.Run, cat *catalogs.Catalog, profile *steptime.Profile, stage int, kdb scenario.KernelLoader) (Evaluation, error) {
	parts, err := replay.Parts(run, cat, replay.Options{Profile: profile, KernelDB: kdb}, stage)
	if err != nil {
		return Evaluation{}, err
	}
	ts := targets(parts)
	if len(ts) == 0 {
		return Evaluation{}, fmt.Errorf("%s: no measured latencies to compare", run.Name)
	}
	p, err := simulateParts(ctx, parts, parts[0].Resolved.Config.Profile)
	if err != nil {
		return Evaluation{}, err
	}
	return evaluation(replay.StageName(run, stage), parts, p, ts), nil
}

func evaluation(name string, parts []replay.Part, rep []prediction, ts []target) Evaluation {
	e := Evaluation{Run: name, Basis: basis(parts), Parts: len(parts), Loss: logLoss(rep, ts), MedianAPE: map[string]float64{}}
	per := map[string][]float64{}
	for _, t := range ts {
		p := predicted(rep, t)
		ape := 100 * math.Abs(p-t.value) / t.value
		f := Figure{Metric: t.metric, Quantile: t.quantile, Measured: t.value, Predicted: p, APE: ape}
		if st := parts[t.part].Stage; len(parts) > 1 && st >= 0 {
			f.Stage = &st
		}
		e.Figures = append(e.Figures, f)
		per[t.metric] = append(per[t.metric], ape)
		if t.quantile == "p99" {
			per["p99"] = append(per["p99"], ape)
		}
	}
	for k, v := range per {
		e.MedianAPE[k] = stats.Median(v)
	}
	return e
}
