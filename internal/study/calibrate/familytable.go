package calibrate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// FamilyRow is one fit of the host costs, fitted on FitOn's runs, and its
// figures on every family's check runs (testdata/host-families.json).
type FamilyRow struct {
	FitOn   string          `json:"fit_on"`
	Host    steptime.Host   `json:"host"`
	Loss    float64         `json:"loss"`
	Figures []FamilyFigures `json:"figures"`
}

// familyColumns are the table's metrics: a family scores the mean or the
// median of each (its summaries give one or the other).
var familyColumns = []struct{ title, prefix string }{
	{"TTFT", "ttft_ms."}, {"TPOT", "tpot_ms."}, {"ITL", "itl_ms."}, {"E2E", "e2e_ms."}, {"throughput", "throughput."},
}

// FamilyTable renders rows as Markdown: the fitted coefficients of each
// fit, then a line per (fit, family scored) with each metric's median
// absolute error, its signed median and the number of figures.
func FamilyTable(rows []FamilyRow) string {
	var b strings.Builder
	b.WriteString("| fitted on | client_us | per_step_us | cpu.step_overhead_us | cpu.per_seq_overhead_us | cpu_v0.step_overhead_us | cpu_v0.per_seq_overhead_us | loss on its fit runs |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		h := r.Host
		loss := "–"
		if r.Loss > 0 {
			loss = fmt.Sprintf("%.3f", r.Loss)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.3g | %.0f | %.3g | %s |\n", r.FitOn, h.Frontend.ClientUS, h.Frontend.PerStepUS,
			h.CPU.StepOverheadUS, h.CPU.PerSeqOverheadUS, h.CPUV0.StepOverheadUS, h.CPUV0.PerSeqOverheadUS, loss)
	}
	b.WriteString("\nMedian |error| (signed median) of each family's check runs, in %; n figures:\n\n")
	b.WriteString("| fitted on | scored on |")
	for _, c := range familyColumns {
		b.WriteString(" " + c.title + " |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(familyColumns)) + "\n")
	for _, r := range rows {
		figs := append([]FamilyFigures(nil), r.Figures...)
		sort.SliceStable(figs, func(i, j int) bool { return familyRank(figs[i].Family) < familyRank(figs[j].Family) })
		for _, f := range figs {
			fmt.Fprintf(&b, "| %s | %s |", r.FitOn, f.Family)
			for _, c := range familyColumns {
				b.WriteString(" " + familyCell(f, c.prefix) + " |")
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

func familyRank(f string) int {
	for i, g := range Families {
		if g == f {
			return i
		}
	}
	return len(Families)
}

// familyCell is the metrics of f under prefix: "12.4 (−8.0), n 409"; a
// dash where the family measures none.
func familyCell(f FamilyFigures, prefix string) string {
	var keys []string
	for k := range f.Metrics {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var cells []string
	for _, k := range keys {
		m := f.Metrics[k]
		stat := strings.TrimPrefix(k, prefix)
		cells = append(cells, fmt.Sprintf("%s %.1f (%+.1f), n %d", stat, m.MedianAbsPct, m.MedianPct, m.N))
	}
	if len(cells) == 0 {
		return "–"
	}
	return strings.Join(cells, "; ")
}
