package uncertainty

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"
)

// residualsFile holds the validation residuals the shipped model is
// fitted on, so that the fit and its coverage check run without the
// reference data (TestErrorModel -update rewrites it from ../shared).
const residualsFile = "testdata/residuals.json"

// caseFigures are one case's headline figures, predicted and measured.
type caseFigures struct {
	Family  string                `json:"family"`
	Case    string                `json:"case"`
	Group   string                `json:"group"`
	Regime  Regime                `json:"regime"`
	Figures map[string][2]float64 `json:"figures"` // metric → [predicted, measured]
}

type residualDoc struct {
	Source string        `json:"source"`
	Cases  []caseFigures `json:"cases"`
}

// encodeResiduals writes the headline residuals, one case per line.
func encodeResiduals(source string, rs []Residual) []byte {
	var cases []caseFigures
	for _, r := range rs {
		if !slices.Contains(Headline, r.Metric) {
			continue
		}
		if n := len(cases); n == 0 || cases[n-1].Case != r.Case || cases[n-1].Family != r.Family {
			cases = append(cases, caseFigures{Family: r.Family, Case: r.Case, Group: r.Group, Regime: r.Regime, Figures: map[string][2]float64{}})
		}
		cases[len(cases)-1].Figures[r.Metric] = [2]float64{r.Predicted, r.Measured}
	}
	head, _ := json.Marshal(source)
	out := []byte("{\"source\": " + string(head) + ",\n\"cases\": [\n")
	for i, c := range cases {
		b, _ := json.Marshal(c)
		out = append(out, b...)
		if i < len(cases)-1 {
			out = append(out, ',')
		}
		out = append(out, '\n')
	}
	return append(out, "]}\n"...)
}

// readResiduals reads residualsFile back into residuals (metrics sorted
// within a case).
func readResiduals(t *testing.T) (string, []Residual) {
	t.Helper()
	b, err := os.ReadFile(residualsFile)
	if err != nil {
		t.Fatalf("%v (run TestErrorModel with -update and ../shared present)", err)
	}
	var doc residualDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", residualsFile, err)
	}
	var rs []Residual
	for _, c := range doc.Cases {
		for _, n := range slices.Sorted(maps.Keys(c.Figures)) {
			f := c.Figures[n]
			rs = append(rs, Residual{Family: c.Family, Case: c.Case, Group: c.Group, Metric: n, Regime: c.Regime, Predicted: f[0], Measured: f[1]})
		}
	}
	return doc.Source, rs
}
