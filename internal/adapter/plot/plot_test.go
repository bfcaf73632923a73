package plot_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/adapter/plot"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/sim"
	"github.com/headroom-sim/headroom/sim/stats"
)

var svgDir = flag.String("svgdir", "", "also write each chart to this folder, to look at")

type chart struct {
	name  string
	draw  func(w io.Writer) error
	title string // text the chart must show
}

func charts(t *testing.T) []chart {
	r := simRun(t)
	return []chart{
		{"ttft_cdf", func(w io.Writer) error { return plot.TTFTCDF(w, r.dists) }, "Time to first token (ms)"},
		{"tpot_cdf", func(w io.Writer) error { return plot.TPOTCDF(w, r.dists) }, "Time per output token (ms)"},
		{"itl_cdf", func(w io.Writer) error { return plot.ITLCDF(w, r.dists) }, "Inter-token latency (ms)"},
		{"e2e_cdf", func(w io.Writer) error { return plot.E2ECDF(w, r.dists) }, "End-to-end latency (ms)"},
		{"cdf_compare", func(w io.Writer) error {
			return plot.CDF(w, "TTFT, A vs B (ms)", "TTFT (ms)", []plot.Series{
				{Name: "A: sample", Values: []float64{12, 15, 19, 22, 40, 41, 80, 300, 900, 30}},
				{Name: "B: histogram", Hist: r.dists.TTFTMS()},
			})
		}, "TTFT, A vs B (ms)"},
		{"timeline", func(w io.Writer) error { return plot.Timeline(w, r.rep) }, "KV cache usage (% of GPU blocks)"},
		{"curve", func(w io.Writer) error { return plot.Curve(w, curveFixture(), slaFixture()) }, "Throughput–latency curve: TTFT (ms)"},
		{"curve_no_sla", func(w io.Writer) error { return plot.Curve(w, curveFixture(), nil) }, "Throughput–latency curve"},
		{"sweep_heatmap", func(w io.Writer) error { return plot.SweepHeatmap(w, sweep2Fixture(), "ttft_ms.p99") }, "Sweep: ttft_ms.p99 (ms) by engine.max_num_seqs × workload.arrival.rate_rps"},
		{"sweep_line", func(w io.Writer) error { return plot.SweepHeatmap(w, sweep1Fixture(true), "") }, "Sweep: e2e_ms.p99 (ms) by engine.max_num_seqs"},
		{"sweep_bars", func(w io.Writer) error { return plot.SweepHeatmap(w, sweep1Fixture(false), "ttft_ms.p99") }, "Sweep: ttft_ms.p99 (ms) by gpu"},
		{"sweep_lines", func(w io.Writer) error {
			return plot.SweepLines(w, sweep2Fixture(), "", "ttft_ms.p99", "throughput.output_tokens_per_s")
		}, "Sweep: by engine.max_num_seqs, one line per workload.arrival.rate_rps"},
		{"pareto", func(w io.Writer) error { return plot.Pareto(w, planFixture()) }, "Plan: cost vs ttft_ms.p99, 6 of 8 qualify"},
		{"day", func(w io.Writer) error { return plot.Day(w, dayFixture()) }, "h100-sxm TP1 through the rate profile"},
		{"load_search", func(w io.Writer) error { return plot.LoadSearch(w, loadFixture()) }, "Load search: max 13.75 req/s within the SLA"},
		{"predicted_vs_measured", func(w io.Writer) error {
			return plot.PredictedVsMeasured(w, "Predicted vs measured, 31 closed-loop runs", accuracyFixture(), 20)
		}, "Predicted vs measured, 31 closed-loop runs"},
	}
}

// svgTexts parses an SVG document strictly and returns its root element's
// name and the text of its <text> elements.
func svgTexts(t *testing.T, b []byte) (root string, texts []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("invalid XML: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = x.Name.Local
			}
			inText = x.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(x))
			}
		}
	}
	return root, texts
}

var datePattern = regexp.MustCompile(`20\d\d-\d\d-\d\d|\d\d:\d\d:\d\d`)

func TestChartsRenderValidDeterministicSVG(t *testing.T) {
	for _, c := range charts(t) {
		t.Run(c.name, func(t *testing.T) {
			var a, b bytes.Buffer
			if err := c.draw(&a); err != nil {
				t.Fatal(err)
			}
			if err := c.draw(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Fatal("two renderings of the same input differ")
			}
			root, texts := svgTexts(t, a.Bytes())
			if root != "svg" {
				t.Fatalf("root element %q, want svg", root)
			}
			all := strings.Join(texts, "\n")
			if !strings.Contains(all, c.title) {
				t.Errorf("no text %q in the chart; texts: %q", c.title, texts)
			}
			if m := datePattern.Find(a.Bytes()); m != nil {
				t.Errorf("the SVG holds what looks like a date or time: %q", m)
			}
			if !bytes.Contains(a.Bytes(), []byte(`width="576pt" height=`)) {
				t.Errorf("want an 8 in (576 pt) wide chart: %.200s", a.Bytes())
			}
			if *svgDir != "" {
				if err := os.WriteFile(filepath.Join(*svgDir, c.name+".svg"), a.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestChartsWithoutDataFailClearly(t *testing.T) {
	cases := []struct {
		name string
		draw func(w io.Writer) error
		want error
		msg  string
	}{
		{"timeline without series", func(w io.Writer) error { return plot.Timeline(w, &sim.Report{}) }, plot.ErrNoTimeseries, "report.timeseries: true"},
		{"timeline nil", func(w io.Writer) error { return plot.Timeline(w, nil) }, plot.ErrNoTimeseries, "report.timeseries: true"},
		{"cdf empty", func(w io.Writer) error { return plot.TTFTCDF(w, plot.NewDistributions()) }, plot.ErrNoData, "no samples"},
		{"cdf empty series", func(w io.Writer) error {
			return plot.CDF(w, "x", "ms", []plot.Series{{Name: "a"}, {Name: "b", Hist: stats.NewHistogram()}})
		}, plot.ErrNoData, "no samples"},
		{"curve empty", func(w io.Writer) error { return plot.Curve(w, &plan.CurveResult{}, nil) }, plot.ErrNoData, "no step"},
		{"sweep empty", func(w io.Writer) error { return plot.SweepHeatmap(w, &plan.SweepResult{}, "") }, plot.ErrNoData, "no points"},
		{"sweep all failed", func(w io.Writer) error {
			return plot.SweepHeatmap(w, &plan.SweepResult{Axes: []string{"tp"}, Points: []plan.SweepPoint{{Values: []any{3}, Error: "tp must divide heads"}}}, "")
		}, plot.ErrNoData, "tp must divide heads"},
		{"plan empty", func(w io.Writer) error { return plot.Pareto(w, &plan.PlanResult{}) }, plot.ErrNoData, "no candidate"},
		{"load search empty", func(w io.Writer) error { return plot.LoadSearch(w, &plan.LoadResult{}) }, plot.ErrNoData, "no probes"},
		{"accuracy empty", func(w io.Writer) error { return plot.PredictedVsMeasured(w, "", nil, 20) }, plot.ErrNoData, "no run with a positive measured and predicted TTFT"},
		{"accuracy nothing predicted", func(w io.Writer) error {
			return plot.PredictedVsMeasured(w, "", []plot.AccuracyPoint{{Series: "m", MeasuredTTFTMS: 5, MeasuredTPOTMS: 1, PredictedTPOTMS: 1}}, 20)
		}, plot.ErrNoData, "TTFT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := c.draw(&buf)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("err %q does not say %q", err, c.msg)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error", buf.Len())
			}
		})
	}
}

func TestSweepHeatmapRejectsBadInput(t *testing.T) {
	var buf bytes.Buffer
	err := plot.SweepHeatmap(&buf, sweep2Fixture(), "nope")
	if err == nil || !strings.Contains(err.Error(), `unknown metric "nope"`) || !strings.Contains(err.Error(), "ttft_ms.p99") {
		t.Errorf("unknown metric: %v", err)
	}
	s := sweep2Fixture()
	s.Axes = append(s.Axes, "tp")
	if err := plot.SweepHeatmap(&buf, s, ""); err == nil || !strings.Contains(err.Error(), "1 or 2 axes") {
		t.Errorf("three axes: %v", err)
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %d bytes on error", buf.Len())
	}
}

func TestSweepLinesRejectsBadInput(t *testing.T) {
	var buf bytes.Buffer
	for _, c := range []struct {
		name string
		s    *plan.SweepResult
		m    []string
		msg  string
	}{
		{"one axis", sweep1Fixture(true), nil, "want 2 axes"},
		{"unknown metric", sweep2Fixture(), []string{"ttft_ms.p99", "nope"}, `unknown metric "nope"`},
		{"categorical first axis", &plan.SweepResult{Axes: []string{"gpu", "tp"}, Columns: []string{"e2e_ms.p99"},
			Points: []plan.SweepPoint{{Values: []any{"h100", 1}, Metrics: []float64{3}}}}, nil, "is not a number"},
		{"no values", &plan.SweepResult{Axes: []string{"tp", "gpu"}, Columns: []string{"e2e_ms.p99"},
			Points: []plan.SweepPoint{{Values: []any{1, "h100"}, Error: "does not fit"}}}, nil, "no point has e2e_ms.p99"},
	} {
		if err := plot.SweepLines(&buf, c.s, "", c.m...); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.name, err, c.msg)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("wrote %d bytes on error", buf.Len())
	}
}

func TestDistributionsCollectWhatTheReportSummarises(t *testing.T) {
	r := simRun(t)
	d, rep := r.dists, r.rep
	if d.Requests() != rep.Requests.Completed {
		t.Fatalf("collected %d requests, the report completed %d", d.Requests(), rep.Requests.Completed)
	}
	if got, want := d.ITLMS().Count(), rep.ITLMS.Count; got != want {
		t.Errorf("ITL gaps: collected %d, report %d", got, want)
	}
	if got, want := d.TPOTMS().Count(), rep.TPOTMS.Count; got != want {
		t.Errorf("TPOT samples: collected %d, report %d", got, want)
	}
	// Histogram quantiles are within 0.1% of the sample's (plus rounding).
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"ttft p50", d.TTFTMS().Quantile(0.5), rep.TTFTMS.P50},
		{"ttft p99", d.TTFTMS().Quantile(0.99), rep.TTFTMS.P99},
		{"e2e p50", d.E2EMS().Quantile(0.5), rep.E2EMS.P50},
		{"tpot p99", d.TPOTMS().Quantile(0.99), rep.TPOTMS.P99},
	} {
		if diff := c.got - c.want; diff > 0.002*c.want+0.001 || diff < -0.002*c.want-0.001 {
			t.Errorf("%s = %v, report %v", c.name, c.got, c.want)
		}
	}
}

type counter struct{ reqs, gaps int }

func (c *counter) Request(sim.RequestSample) { c.reqs++ }
func (c *counter) Token(float64, float64)    { c.gaps++ }

func TestWithSinksFeedsEverySink(t *testing.T) {
	a, b := &counter{}, &counter{}
	r := simRun(t)
	// Run the same small scenario again with two sinks at once.
	rep, err := sim.Run(t.Context(), mustConfig(t), sim.WithSinks(a, b))
	if err != nil {
		t.Fatal(err)
	}
	if a.reqs != rep.Requests.Completed || b.reqs != a.reqs || a.gaps != b.gaps || int64(a.gaps) != rep.ITLMS.Count {
		t.Errorf("sinks saw %+v and %+v; report %d requests, %d gaps", a, b, rep.Requests.Completed, rep.ITLMS.Count)
	}
	if rep.Requests.Completed != r.rep.Requests.Completed {
		t.Errorf("same scenario completed %d then %d", r.rep.Requests.Completed, rep.Requests.Completed)
	}
	if _, err := sim.Run(t.Context(), mustConfig(t), sim.WithSinks()); err != nil {
		t.Errorf("no sinks: %v", err)
	}
}

func TestRenderPicksEachResultsChart(t *testing.T) {
	r := simRun(t)
	for _, c := range []struct {
		result any
		title  string
	}{
		{r.rep, "KV cache usage"},
		{curveFixture(), "Throughput–latency curve"},
		{sweep2Fixture(), "Sweep: e2e_ms.p99"},
		{planFixture(), "Plan: cost vs"},
		{loadFixture(), "Load search"},
		{r.dists, "Time to first token"},
	} {
		var buf bytes.Buffer
		if err := plot.Render(&buf, c.result); err != nil {
			t.Fatalf("%T: %v", c.result, err)
		}
		if _, texts := svgTexts(t, buf.Bytes()); !strings.Contains(strings.Join(texts, "\n"), c.title) {
			t.Errorf("%T: no %q in %q", c.result, c.title, texts)
		}
	}
	if err := plot.Render(io.Discard, &plan.CompareResult{}); !errors.Is(err, plot.ErrNoChart) {
		t.Errorf("compare: %v", err)
	}
}

func TestDegenerateInputsStillRender(t *testing.T) {
	one := curveFixture()
	one.Points, one.Knee = one.Points[:1], 0
	flat := sweep2Fixture()
	for i := range flat.Points {
		flat.Points[i].Metrics, flat.Points[i].Error = []float64{7, 7, 7}, ""
	}
	single := planFixture()
	single.Candidates, single.Missed = single.Candidates[:1], nil
	probe := loadFixture()
	probe.Probes, probe.MaxLoad = probe.Probes[:1], 0
	zeros := sweep1Fixture(true)
	for i := range zeros.Points {
		zeros.Points[i].Values[0] = 0
	}
	for name, draw := range map[string]func(io.Writer) error{
		"cdf one value": func(w io.Writer) error { return plot.CDF(w, "t", "ms", []plot.Series{{Values: []float64{5}}}) },
		"cdf with zeros": func(w io.Writer) error {
			return plot.CDF(w, "t", "ms", []plot.Series{{Values: []float64{0, 0, 1, 1000}}})
		},
		"timeline one point": func(w io.Writer) error { return plot.Timeline(w, &sim.Report{Timeseries: []sim.TimePoint{{TS: 1}}}) },
		"curve one point":    func(w io.Writer) error { return plot.Curve(w, one, slaFixture()) },
		"flat heat map":      func(w io.Writer) error { return plot.SweepHeatmap(w, flat, "ttft_ms.p99") },
		"one candidate":      func(w io.Writer) error { return plot.Pareto(w, single) },
		"one probe":          func(w io.Writer) error { return plot.LoadSearch(w, probe) },
		"sweep same x":       func(w io.Writer) error { return plot.SweepHeatmap(w, zeros, "") },
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := draw(&buf); err != nil {
				t.Fatal(err)
			}
			if root, _ := svgTexts(t, buf.Bytes()); root != "svg" {
				t.Fatalf("root %q", root)
			}
		})
	}
}

func TestSweepPointsMissingValuesAreSkipped(t *testing.T) {
	s := sweep2Fixture()
	s.Points = append(s.Points, plan.SweepPoint{Values: []any{32}, Metrics: []float64{1, 2, 3}})
	if err := plot.SweepHeatmap(io.Discard, s, ""); err != nil {
		t.Fatal(err)
	}
	s.Points = []plan.SweepPoint{{Metrics: []float64{1, 2, 3}}}
	if err := plot.SweepHeatmap(io.Discard, s, ""); !errors.Is(err, plot.ErrNoData) {
		t.Errorf("err = %v", err)
	}
}

// A disaggregated candidate is labelled by its pools, and the legend says
// how such labels read only when one is drawn.
func TestParetoLabelsDisaggregatedShapes(t *testing.T) {
	var plain bytes.Buffer
	if err := plot.Pareto(&plain, planFixture()); err != nil {
		t.Fatal(err)
	}
	r := planFixture()
	sh := plan.DisaggShape{Prefill: plan.PoolShape{GPU: "h100-sxm", TP: 1, Replicas: 2}, Decode: plan.PoolShape{GPU: "h200", TP: 1, Replicas: 1}}
	r.Candidates = append(r.Candidates, plan.Candidate{Config: plan.Config{Disaggregation: &sh}, GPUs: 3, CostPerHourUSD: 8.5,
		MeetsSLA: true, Qualifies: true, ParetoLatencyMS: 450, Pareto: true})
	var buf bytes.Buffer
	if err := plot.Pareto(&buf, r); err != nil {
		t.Fatal(err)
	}
	_, texts := svgTexts(t, buf.Bytes())
	_, plainTexts := svgTexts(t, plain.Bytes())
	for _, want := range []string{"P h100-sxm TP1×2 + D h200 TP1×1", "prefill and decode pools"} {
		if !strings.Contains(strings.Join(texts, "\n"), want) {
			t.Errorf("no %q in the chart: %q", want, texts)
		}
		if strings.Contains(strings.Join(plainTexts, "\n"), want) {
			t.Errorf("%q in a chart without disaggregated shapes", want)
		}
	}
}

func TestPredictedVsMeasured(t *testing.T) {
	var buf bytes.Buffer
	if err := plot.PredictedVsMeasured(&buf, "", accuracyFixture(), 20); err != nil {
		t.Fatal(err)
	}
	_, texts := svgTexts(t, buf.Bytes())
	all := strings.Join(texts, "\n")
	// The fixture's factors 0.6, 0.85, 1, 1.1, 1.5 give |TTFT error| 40,
	// 15, 0, 10, 50% (median 15) and |TPOT error| 66.7, 17.6, 0, 9.1,
	// 33.3% (median 17.6); the failed run (predicted 0) is left out of
	// both panels but counted in its series.
	for _, want := range []string{
		"Predicted vs measured", "TTFT: median |error| 15.0%, n=30", "TPOT: median |error| 17.6%, n=30",
		"measured mean TTFT (ms)", "predicted mean TPOT (ms)", "predicted = measured", "within ±20%",
		"gpt-oss-120b (11)", "llama-3.1-8b (10)", "minimax-m2.5 (10)",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in %q", want, texts)
		}
	}
	if i, j := strings.Index(all, "gpt-oss-120b (11)"), strings.Index(all, "llama-3.1-8b (10)"); i > j {
		t.Error("series not in name order")
	}
	for _, band := range []float64{0, 100, math.NaN()} {
		if err := plot.PredictedVsMeasured(io.Discard, "", accuracyFixture(), band); err == nil || !strings.Contains(err.Error(), "band") {
			t.Errorf("band %v: %v", band, err)
		}
	}
}
