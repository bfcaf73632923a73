package kerneldb

import (
	"os"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
	"github.com/headroom-sim/headroom/sim/steptime"
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

// The built-in databases hold the MLA module tables of every system, both
// kinds, with bf16 projections for bf16 and fp8 KV (and, but on the RTX
// PRO 6000, block-fp8 projections).
func TestBuiltinMLAModules(t *testing.T) {
	fsys := catalogs.Kernels()
	systems, err := Systems(fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range systems {
		db, err := Load(fsys, s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		size := db.Size()
		if size["mla_context_module"] == 0 || size["mla_generation_module"] == 0 {
			t.Errorf("%s: MLA module rows %v", s, size)
		}
		for _, kv := range []string{"bf16", "fp8"} {
			for _, f := range []string{steptime.FormatBF16, steptime.FormatFP8Block} {
				if s == "rtx_pro_6000_server" && f == steptime.FormatFP8Block {
					continue // measured with bf16 and nvfp4 projections only
				}
				if !db.HasMLAModule(kv, f) {
					t.Errorf("%s: no MLA module rows for KV %s, projections %s", s, kv, f)
				}
			}
		}
		if !strings.Contains(db.Source, "mla/vllm/0.19.0/mla_generation_module_perf.parquet") {
			t.Errorf("%s: source %q does not name the MLA tables", s, db.Source)
		}
	}
}
