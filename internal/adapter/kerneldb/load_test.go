package kerneldb

import (
	"os"
	"testing"

	"github.com/headroom-sim/headroom/internal/testkit/refdata"
)

func TestLoadShared(t *testing.T) {
	dir := refdata.Path(t, "profiling/aiconfigurator")
	fsys := os.DirFS(dir)
	systems, err := Systems(fsys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"b200_sxm", "b300_sxm", "h100_sxm", "h200_sxm", "rtx_pro_6000_server"}
	if len(systems) != len(want) {
		t.Fatalf("systems %v, want %v", systems, want)
	}
	for _, s := range systems {
		db, err := Load(fsys, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %v", db.Source, db.Size())
	}
}
