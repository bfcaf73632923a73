package calibrate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
)

// TestRescoreHostTable rewrites testdata/host-families.json with every
// row re-scored by RescoreHostTable (HEADROOM_RESCORE=1; about a minute a
// row on two cores, needs ../shared).
func TestRescoreHostTable(t *testing.T) {
	if os.Getenv("HEADROOM_RESCORE") == "" {
		t.Skip("HEADROOM_RESCORE not set")
	}
	refdata.Path(t, "measured")
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	hc, err := LoadHostCases(os.DirFS(refdata.Dir()), cat)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join("testdata", "host-families.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var rows []FamilyRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	rows = RescoreHostTable(context.Background(), hc, rows)
	b, _ = json.MarshalIndent(rows, "", "  ")
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
