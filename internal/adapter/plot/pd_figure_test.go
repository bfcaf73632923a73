package plot_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/adapter/kerneldb"
	"github.com/headroom-sim/headroom/internal/adapter/plot"
	"github.com/headroom-sim/headroom/internal/study/plan"
	"github.com/headroom-sim/headroom/internal/study/scenario"
	"github.com/headroom-sim/headroom/internal/testkit/golden"
	"github.com/headroom-sim/headroom/sim/steptime"
)

var update = flag.Bool("update", false, "rewrite the figures under docs/ from the simulations")

// The comparison the DistServe (OSDI'24) and Splitwise (ISCA'24) papers
// make: on the same two H100s, aggregated serving (two replicas, each
// mixing prefill chunks into its decode steps) against a disaggregated
// pair (one prefill GPU, one decode GPU, the KV over NVLink). A fixed
// decode-heavy stream (256-token prompts, 256 output tokens, 8 req/s)
// shares the cluster with a prefill-heavy stream (4096-token prompts, one
// output token) whose rate grows. Decode TPOT and ITL are the
// decode-heavy requests' (the others have no second token).
const (
	pdFigure     = "../../../docs/figures/pd-interference.svg"
	pdDecodeRPS  = 8.0
	pdDurationS  = 120.0
	pdLongPrompt = 4096
)

var pdPrefillRPS = []float64{0, 1, 2, 3, 4, 5, 6}

// pdTrace is the two streams, Poisson, for one prefill-heavy rate.
func pdTrace(prefillRPS float64) []byte {
	type rec struct {
		at      float64
		in, out int
	}
	var recs []rec
	stream := func(rate float64, in, out int, seed uint64) {
		if rate == 0 {
			return
		}
		r := rand.New(rand.NewPCG(seed, 1))
		for t := r.ExpFloat64() / rate; t < pdDurationS; t += r.ExpFloat64() / rate {
			recs = append(recs, rec{t, in, out})
		}
	}
	stream(pdDecodeRPS, 256, 256, 1)
	stream(prefillRPS, pdLongPrompt, 1, 2)
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].at < recs[j].at })
	var b bytes.Buffer
	b.WriteString("arrival_s,input_tokens,output_tokens\n")
	for _, x := range recs {
		fmt.Fprintf(&b, "%.6f,%d,%d\n", x.at, x.in, x.out)
	}
	return b.Bytes()
}

// pdSweep runs the comparison as a sweep: the trace file by prefill-heavy
// rate, crossed with aggregated and disaggregated serving, then names the
// axes as the figure shows them.
func pdSweep(t *testing.T) *plan.SweepResult {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var traces []any
	for _, r := range pdPrefillRPS {
		name := fmt.Sprintf("prefill-%g.csv", r)
		files[name] = pdTrace(r)
		traces = append(traces, name)
	}
	kdb := kerneldb.ForCatalog(cat.GPU)
	env := scenario.Env{Catalog: cat,
		Open: func(name string) (io.ReadCloser, error) {
			b, ok := files[name]
			if !ok {
				return nil, fmt.Errorf("no trace %s", name)
			}
			return io.NopCloser(bytes.NewReader(b)), nil
		},
		KernelDB: func(g *hardware.GPU, dir string) (*steptime.KernelDB, error) { return kdb.Load(g, dir) },
	}
	base, err := scenario.Decode(strings.NewReader(`
model: llama-3.1-8b
gpu: h100-sxm
replicas: 2
workload:
  trace: {file: prefill-0.csv, format: csv}
`), "pd-interference")
	if err != nil {
		t.Fatal(err)
	}
	const (
		aggregated = "aggregated, 2 replicas"
		disagg     = "disaggregated, 1P + 1D"
	)
	res, err := (&plan.Runner{Env: env}).Sweep(context.Background(), plan.SweepSpec{Scenario: base, Axes: []plan.Axis{
		{Path: "workload.trace.file", Values: traces},
		{Path: "disaggregation", Values: []any{nil, map[string]any{
			"prefill": map[string]any{"replicas": 1}, "decode": map[string]any{"replicas": 1},
			"kv_transfer": map[string]any{"link": "nvlink4"}}}},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Points {
		pt := &res.Points[i]
		if pt.Error != "" {
			t.Fatalf("point %v: %s", pt.Values, pt.Error)
		}
		pt.Values[0] = pdPrefillRPS[slices.Index(traces, pt.Values[0])]
		pt.Values[1] = map[bool]string{true: aggregated, false: disagg}[pt.Values[1] == nil]
	}
	res.Axes = []string{fmt.Sprintf("prefill-heavy load (req/s of %d-token prompts)", pdLongPrompt), "serving"}
	return res
}

// TestPDInterferenceFigure checks what the figure shows, and that
// docs/figures/pd-interference.svg is what these simulations draw:
// disaggregation removes the interference of prefills with decodes (the
// decode-heavy requests' TPOT and ITL stay flat as the prefill load
// grows), where aggregated serving's rise. Regenerate the figure with
//
//	go test ./internal/adapter/plot -run TestPDInterferenceFigure -update
func TestPDInterferenceFigure(t *testing.T) {
	if testing.Short() {
		t.Skip("14 simulations: run without -short")
	}
	res := pdSweep(t)
	at := func(serving string, rps float64, metric string) float64 {
		c := slices.Index(res.Columns, metric)
		for _, pt := range res.Points {
			if pt.Values[0] == rps && strings.HasPrefix(pt.Values[1].(string), serving) {
				return pt.Metrics[c]
			}
		}
		t.Fatalf("no point %s at %g", serving, rps)
		return 0
	}
	lo, hi := pdPrefillRPS[0], pdPrefillRPS[len(pdPrefillRPS)-1]
	for _, c := range []struct {
		serving, metric string
		most, least     float64 // bounds on value at hi / value at lo
	}{
		{"disaggregated", "tpot_ms.p50", 1.02, 0},
		{"disaggregated", "itl_ms.p99", 1.10, 0},
		{"aggregated", "tpot_ms.p50", math.Inf(1), 1.15},
		{"aggregated", "itl_ms.p99", math.Inf(1), 3},
	} {
		a, b := at(c.serving, lo, c.metric), at(c.serving, hi, c.metric)
		if r := b / a; r > c.most || r < c.least {
			t.Errorf("%s %s: %.2f ms with no prefill-heavy load, %.2f ms at %g req/s (×%.2f); want ×%g to ×%g", c.serving, c.metric, a, b, hi, r, c.least, c.most)
		}
		t.Logf("%s %s: %.2f → %.2f ms", c.serving, c.metric, a, b)
	}
	for _, serving := range []string{"aggregated", "disaggregated"} {
		t.Logf("%s ttft_ms.p99: %.0f → %.0f ms", serving, at(serving, lo, "ttft_ms.p99"), at(serving, hi, "ttft_ms.p99"))
	}
	var svg bytes.Buffer
	title := "Prefill/decode interference, Llama-3.1-8B on 2× H100 (KV over NVLink)"
	if err := plot.SweepLines(&svg, res, title, "tpot_ms.p50", "itl_ms.p99", "ttft_ms.p99"); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.FromSlash(pdFigure), svg.Bytes(), *update)
}
