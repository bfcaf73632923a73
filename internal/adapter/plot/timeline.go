package plot

import (
	"errors"
	"fmt"
	"io"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"

	"github.com/headroom-sim/headroom/sim"
)

// ErrNoTimeseries is returned for a report without a time series.
var ErrNoTimeseries = errors.New("the report has no time series: run with report.timeseries: true")

// Timeline draws the engine's state per simulated second in three stacked
// panels: KV-cache usage (with a cross at each second in which requests
// were preempted), requests running and waiting, and prompt and output token
// throughput. It needs rep.Timeseries (report.timeseries: true).
func Timeline(w io.Writer, rep *sim.Report) error {
	if rep == nil || len(rep.Timeseries) == 0 {
		return ErrNoTimeseries
	}
	ts := rep.Timeseries
	var kv, run, wait, out, in, pre plotter.XYs
	var prevPre int64
	maxKV := 0.0
	for _, p := range ts {
		u := 100 * p.KVUsageRatio
		maxKV = max(maxKV, u)
		kv = append(kv, plotter.XY{X: p.TS, Y: u})
		run = append(run, plotter.XY{X: p.TS, Y: float64(p.Running)})
		wait = append(wait, plotter.XY{X: p.TS, Y: float64(p.Waiting)})
		out = append(out, plotter.XY{X: p.TS, Y: p.OutputTokensPerS})
		in = append(in, plotter.XY{X: p.TS, Y: p.PromptTokensPerS})
		if p.PreemptionsTotal > prevPre {
			pre = append(pre, plotter.XY{X: p.TS, Y: u})
		}
		prevPre = p.PreemptionsTotal
	}
	kvTitle := "KV cache usage (% of GPU blocks)"
	reqTitle := "Requests running and waiting (count)"
	if rep.Replicas > 1 {
		kvTitle = fmt.Sprintf("KV cache usage (%% of GPU blocks, mean of %d replicas)", rep.Replicas)
		reqTitle = fmt.Sprintf("Requests running and waiting (count, sum of %d replicas)", rep.Replicas)
	}
	if rep.Model != "" {
		kvTitle = rep.Model + ": " + kvTitle
	}
	const xLabel = "simulated time (s)"

	pKV := newPlot(kvTitle, "", "KV usage (%)")
	pKV.Y.Min, pKV.Y.Max = 0, max(100, maxKV)
	if err := addLines(pKV, []string{"KV cache usage"}, kv); err != nil {
		return err
	}
	if len(pre) > 0 {
		s, err := points(pre, colSLA, draw.CrossGlyph{}, 3)
		if err != nil {
			return err
		}
		pKV.Add(s)
		pKV.Legend.Add(fmt.Sprintf("preempted (%d in all)", prevPre), s)
	}

	pReq := newPlot(reqTitle, "", "requests")
	pReq.Y.Min = 0
	if err := addLines(pReq, []string{"running", "waiting"}, run, wait); err != nil {
		return err
	}

	pTok := newPlot("Token throughput (tokens/s)", xLabel, "tokens/s")
	pTok.Y.Min = 0
	if err := addLines(pTok, []string{"output tokens/s", "prompt tokens/s"}, out, in); err != nil {
		return err
	}
	ps := []*gplot.Plot{pKV, pReq, pTok}
	for _, p := range ps {
		p.X.Min = 0
		p.Legend.Top, p.Legend.Left = true, false
	}
	return renderStack(w, ps)
}

// addLines adds one coloured line per series with its legend entry.
func addLines(p *gplot.Plot, names []string, series ...plotter.XYs) error {
	for i, xys := range series {
		l, err := line(xys, seriesColor(i))
		if err != nil {
			return err
		}
		l.Width = 1.5
		p.Add(l)
		p.Legend.Add(names[i], l)
	}
	return nil
}
