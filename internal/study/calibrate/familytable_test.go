package calibrate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

const hostDoc = "../../../docs/host-costs.md"

// TestHostCostsDoc checks that docs/host-costs.md's table is what
// testdata/host-families.json (written by TestFitHostFamilies) holds; it
// needs no reference data, so a clean checkout checks it too.
func TestHostCostsDoc(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "host-families.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []FamilyRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 2 {
		t.Fatalf("%d rows in host-families.json: want the sourced start and at least one fit", len(rows))
	}
	doc, err := os.ReadFile(hostDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	want, err := SpliceFamilyTable(s, rows)
	if err != nil {
		t.Fatalf("%s: %v", hostDoc, err)
	}
	if want == s {
		return
	}
	if *update {
		if err := os.WriteFile(hostDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the generated table is stale: run go test ./internal/study/calibrate -run TestHostCostsDoc -update", hostDoc)
}

func TestFamilyTableCells(t *testing.T) {
	f := FamilyFigures{Family: FamilyOpenLoop, Metrics: map[string]MetricErrors{
		"ttft_ms.p50": {N: 9, MedianAbsPct: 4.1, MedianPct: -4.1}, "itl_ms.p50": {N: 2, MedianAbsPct: 1.25, MedianPct: 1.2}}}
	for prefix, want := range map[string]string{"ttft_ms.": "p50 4.1 (-4.1), n 9", "itl_ms.": "p50 1.2 (+1.2), n 2", "e2e_ms.": "–"} {
		if got := familyCell(f, prefix); got != want {
			t.Errorf("%s: %q, want %q", prefix, got, want)
		}
	}
}
