package uncertainty

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/golden"
)

// minChecked is the fewest held-out figures a metric's coverage is judged
// on: with fewer, one figure moves it by more than the 75-85% window.
const minChecked = 10

// coverageMisses are the headline metrics whose held-out 80% coverage is
// not within 75-85%, as measured (TestCoverage fails when a figure moves
// by more than half a point, so that the ledger is rewritten with the new
// one, or the entry removed when the metric comes within the window).
// The share is NaN for a metric with no held-out band at all.
var coverageMisses = map[string]struct {
	share float64
	n     int // held-out figures with a band
	why   string
}{
	"ttft_ms.p50":               {0.957, 23, whyTTFTQuantiles},
	"ttft_ms.p90":               {0.913, 23, whyTTFTQuantiles},
	"ttft_ms.p95":               {0.913, 23, whyTTFTQuantiles},
	"ttft_ms.p99":               {0.913, 23, whyTTFTQuantiles},
	"tpot_ms.p50":               {0.882, 17, whyTPOTQuantiles},
	"tpot_ms.p90":               {0.882, 17, whyTPOTQuantiles},
	"tpot_ms.p95":               {0.941, 17, whyTPOTQuantiles},
	"tpot_ms.p99":               {0.941, 17, whyTPOTQuantiles},
	"itl_ms.mean":               {1.000, 2, whyITL},
	"itl_ms.p50":                {1.000, 2, whyITL},
	"itl_ms.p90":                {1.000, 2, whyITL},
	"itl_ms.p95":                {1.000, 2, whyITL},
	"itl_ms.p99":                {1.000, 2, whyITL},
	"e2e_ms.mean":               {0.913, 23, whyE2E},
	"e2e_ms.p50":                {0.913, 23, whyE2E},
	"e2e_ms.p90":                {0.913, 23, whyE2E},
	"e2e_ms.p95":                {0.957, 23, whyE2E},
	"e2e_ms.p99":                {0.957, 23, whyE2E},
	"throughput.requests_per_s": {0.882, 17, whyThroughput},
}

// Why the ledger's metrics miss.
const (
	whyTTFTQuantiles = "over-covered; 8 groups, one figure is 4.3 points; the open loops' TTFT pools hold a request-level run predicted 30x low (qwen3-30b-a3b on the RTX PRO 6000, p99) and the inference-perf stages' up to 2.4x low, which widen every open loop's band"
	whyTPOTQuantiles = "over-covered; 7 groups, one figure is 5.9 points; the qwen3-30b-a3b request-level run (0.69x) and llama-2-7b's (1.24x) widen every open loop's band"
	whyE2E           = "over-covered; 8 groups, one figure is 4.3 points; the qwen3-30b-a3b request-level run (0.67x) and llama-2-7b's (1.23x) widen every open loop's band, the others are within 12%"
	whyITL           = "the residency traces (one group) alone measured ITL apart from TPOT: too few to judge; ITL's bands are TPOT's pools"
	whyThroughput    = "over-covered; the request-level runs are open loops at fixed rates (throughput is the arrival rate, errors near 0 but 0.87x and 1.31x in two); the 21 inference-perf stages, the one group that drove throughput to saturation, have no band held out"
)

// TestCoverage holds each group out of the fit in turn and checks that
// the 80% bands of the fit without it hold 75-85% of its measured values,
// per metric; the table of every metric and regime (with the 95% bands'
// coverage) is testdata/coverage.txt.
func TestCoverage(t *testing.T) {
	_, rs := readResiduals(t)
	c, err := LeaveGroupOut(rs, DefaultFit)
	if err != nil {
		t.Fatal(err)
	}
	for _, metric := range Headline {
		x := c.Metric[metric]
		if x == nil {
			x = &Tally{}
		}
		share := math.NaN()
		if x.N > 0 {
			share = x.Ratio80()
		}
		miss, listed := coverageMisses[metric]
		inside := x.N >= minChecked && share >= 0.75 && share <= 0.85
		switch {
		case inside && listed:
			t.Errorf("%s: %.1f%% of %d held-out values inside the 80%% band, within 75-85%%: remove it from coverageMisses", metric, 100*share, x.N)
		case !inside && !listed:
			t.Errorf("%s: %.1f%% of %d held-out values inside the 80%% band (%d without a band), want 75-85%% on at least %d", metric, 100*share, x.N, x.NoBand, minChecked)
		case listed && (x.N != miss.n || !(math.IsNaN(share) && math.IsNaN(miss.share)) && !(math.Abs(share-miss.share) <= 0.005)):
			t.Errorf("%s: %.1f%% of %d held-out values inside the 80%% band, the ledger says %.1f%% of %d: update it", metric, 100*share, x.N, 100*miss.share, miss.n)
		}
	}
	golden.Check(t, filepath.Join("testdata", "coverage.txt"), coverageTable(c), *update)
}

// coverageTable writes the coverage per metric and per regime value.
func coverageTable(c *Coverage) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "Leave-one-group-out coverage of the error model's bands (%d groups; go test ./internal/study/uncertainty -run TestCoverage)\n\n", c.Groups)
	row := func(name string, x *Tally) {
		fmt.Fprintf(&b, "%-28s %5d %7.1f%% %7.1f%% %8d\n", name, x.N, 100*x.Ratio80(), 100*x.Ratio95(), x.NoBand)
	}
	fmt.Fprintf(&b, "%-28s %5s %8s %8s %8s\n", "metric", "n", "in 80%", "in 95%", "no band")
	for _, m := range Headline {
		if x := c.Metric[m]; x != nil {
			row(m, x)
		} else {
			row(m, &Tally{})
		}
	}
	fmt.Fprintf(&b, "\n%-28s %5s %8s %8s\n", "regime (every metric)", "n", "in 80%", "in 95%")
	for _, k := range slices.Sorted(maps.Keys(c.Regime)) {
		x := c.Regime[k]
		fmt.Fprintf(&b, "%-28s %5d %7.1f%% %7.1f%%\n", k, x.N, 100*x.Ratio80(), 100*x.Ratio95())
	}
	fmt.Fprintf(&b, "\n%-28s %5d %7.1f%% %7.1f%%\n", "inside the envelope", c.Inside.N, 100*c.Inside.Ratio80(), 100*c.Inside.Ratio95())
	fmt.Fprintf(&b, "%-28s %5d %7.1f%% %7.1f%%\n", "outside (bands widened)", c.Outside.N, 100*c.Outside.Ratio80(), 100*c.Outside.Ratio95())
	return []byte(b.String())
}
