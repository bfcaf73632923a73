package catalogs

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
)

// gpuTestFiles returns the embedded gpus/*.yaml files and their contents.
func gpuTestFiles(t testing.TB) map[string][]byte {
	t.Helper()
	names, err := fs.Glob(builtinFS, "gpus/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no embedded gpus/*.yaml files")
	}
	out := map[string][]byte{}
	for _, n := range names {
		data, err := fs.ReadFile(builtinFS, n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = data
	}
	return out
}

// gpuTestCatalog loads only the embedded GPU files, so that these tests do
// not depend on the model catalog.
func gpuTestCatalog(t testing.TB) *Catalog {
	t.Helper()
	c := New()
	for name, data := range gpuTestFiles(t) {
		if err := c.LoadGPUs(name, bytes.NewReader(data)); err != nil {
			t.Fatalf("LoadGPUs(%s): %v", name, err)
		}
	}
	return c
}

// requiredGPUs are the ids the built-in catalog must have, each with one
// alias people type.
var requiredGPUs = []struct{ id, alias string }{
	{"a100-40gb", "nvidia a100-sxm4-40gb"},
	{"a100-80gb", "a100"},
	{"a100-80gb", "NVIDIA A100-SXM4-80GB"},
	{"h100-sxm", "h100"},
	{"h100-sxm", "NVIDIA H100 80GB HBM3"},
	{"h100-pcie", "nvidia h100 pcie"},
	{"h100-nvl", "nvidia h100 nvl"},
	{"h200", "h200-sxm"},
	{"h20", "nvidia h20"},
	{"l40s", "nvidia l40s"},
	{"l4", "nvidia l4"},
	{"a10g", "nvidia a10g"},
	{"a10", "nvidia a10"},
	{"b200", "b200-sxm"},
	{"gb200", "gb200-nvl72"},
	{"mi300x", "mi300"},
	{"mi325x", "amd instinct mi325x"},
	{"gaudi3", "gaudi-3"},
	{"rtx-4090", "rtx4090"},
	{"rtx-4090", "NVIDIA GeForce RTX 4090"},
	{"rtx-pro-6000", "rtxpro6000"},
	{"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition"},
	{"rtx-pro-6000", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"},
	{"b300", "hgx b300"},
	// The system names of aiconfigurator's kernel tables and measured runs.
	{"h100-sxm", "h100_sxm"},
	{"h200", "h200_sxm"},
	{"b200", "b200_sxm"},
	{"b300", "b300_sxm"},
	{"rtx-pro-6000", "rtx_pro_6000_server"},
}

func TestBuiltinLoads(t *testing.T) {
	c, err := Builtin()
	if err != nil {
		t.Fatalf("Builtin: %v", err)
	}
	for _, r := range requiredGPUs {
		if _, err := c.GPU(r.id); err != nil {
			t.Errorf("Builtin().GPU(%q): %v", r.id, err)
		}
	}
}

func TestGPULookup(t *testing.T) {
	c := gpuTestCatalog(t)
	for _, r := range requiredGPUs {
		for _, name := range []string{r.id, strings.ToUpper(r.id), r.alias, strings.ToUpper(r.alias), " " + r.alias + " "} {
			t.Run(r.id+"/"+name, func(t *testing.T) {
				g, err := c.GPU(name)
				if err != nil {
					t.Fatalf("GPU(%q): %v", name, err)
				}
				if g.ID != r.id {
					t.Errorf("GPU(%q).ID = %q, want %q", name, g.ID, r.id)
				}
			})
		}
	}
	if _, err := c.GPU("h100-sxm9"); !errors.Is(err, ErrUnknownGPU) {
		t.Errorf("GPU(unknown) error = %v, want ErrUnknownGPU", err)
	}
}

// Every alias of every entry resolves to that entry (no alias is shadowed).
func TestGPUAliasesResolveToOwner(t *testing.T) {
	c := gpuTestCatalog(t)
	for _, g := range c.GPUs() {
		for _, a := range g.Aliases {
			got, err := c.GPU(a)
			if err != nil {
				t.Errorf("%s: alias %q: %v", g.ID, a, err)
				continue
			}
			if got.ID != g.ID {
				t.Errorf("%s: alias %q resolves to %q", g.ID, a, got.ID)
			}
		}
	}
}

func TestGPUDenseNotAboveSparse(t *testing.T) {
	c := gpuTestCatalog(t)
	for _, g := range c.GPUs() {
		for _, p := range []struct {
			name          string
			dense, sparse float64
		}{
			{"bf16", g.DenseTFLOPS.BF16, g.SparseTFLOPS.BF16},
			{"fp16", g.DenseTFLOPS.FP16, g.SparseTFLOPS.FP16},
			{"fp8", g.DenseTFLOPS.FP8, g.SparseTFLOPS.FP8},
			{"int8", g.DenseTFLOPS.INT8, g.SparseTFLOPS.INT8},
			{"fp4", g.DenseTFLOPS.FP4, g.SparseTFLOPS.FP4},
		} {
			if p.dense > 0 && p.sparse > 0 && p.dense > p.sparse {
				t.Errorf("%s %s: dense %.1f > sparse %.1f", g.ID, p.name, p.dense, p.sparse)
			}
			if p.dense == 0 && p.sparse > 0 {
				t.Errorf("%s %s: sparse %.1f without a dense figure", g.ID, p.name, p.sparse)
			}
			// Where both are known the 2:4 figure is twice the dense one,
			// except for Blackwell Ultra's fp4 (18 sparse, 14 dense).
			if g.ID == "b300" && p.name == "fp4" {
				continue
			}
			if p.dense > 0 && p.sparse > 0 && (p.sparse < 1.9*p.dense || p.sparse > 2.1*p.dense) {
				t.Errorf("%s %s: sparse %.1f is not about 2x dense %.1f", g.ID, p.name, p.sparse, p.dense)
			}
		}
	}
}

// Driver-reported memory is a little below the marketing capacity, read as
// decimal GB or as GiB, whichever the vendor means.
func TestGPUMemoryBytesPlausible(t *testing.T) {
	c := gpuTestCatalog(t)
	for _, g := range c.GPUs() {
		if g.MemoryGB <= 0 {
			t.Errorf("%s: memory_gb = %v", g.ID, g.MemoryGB)
			continue
		}
		b := float64(g.MemoryBytes)
		dec := b / (g.MemoryGB * 1e9)
		bin := b / (g.MemoryGB * hardware.GiB)
		ok := func(r float64) bool { return r >= 0.90 && r <= 1.005 }
		if !ok(dec) && !ok(bin) {
			t.Errorf("%s: memory_bytes %d is %.3f of %v GB and %.3f of %v GiB; want 0.90-1.005 of one",
				g.ID, g.MemoryBytes, dec, g.MemoryGB, bin, g.MemoryGB)
		}
	}
}

func TestGPUSpotFigures(t *testing.T) {
	c := gpuTestCatalog(t)
	get := func(id string) *hardware.GPU {
		t.Helper()
		g, err := c.GPU(id)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	tests := []struct {
		name      string
		got, want float64
	}{
		// Measured by a real vLLM run (torch device_total_memory_bytes).
		{"rtx-4090 memory_bytes", float64(get("rtx-4090").MemoryBytes), 25250627584},
		// Dense, not the 1,979 sparse headline.
		{"h100-sxm dense bf16", get("h100-sxm").DenseTFLOPS.BF16, 989},
		{"h100-sxm sparse bf16", get("h100-sxm").SparseTFLOPS.BF16, 1979},
		{"h100-sxm dense fp8", get("h100-sxm").DenseTFLOPS.FP8, 1979},
		{"a100-80gb dense bf16", get("a100-80gb").DenseTFLOPS.BF16, 312},
		{"l40s dense bf16", get("l40s").DenseTFLOPS.BF16, 362.05},
		// RTX 4090: FP32-accumulate figure, not the FP16-accumulate 330.3.
		{"rtx-4090 dense bf16", get("rtx-4090").DenseTFLOPS.BF16, 165.2},
		{"gb200 max_gpus_per_node", float64(get("gb200").MaxGPUsPerNode), 72},
		// B300 (aiconfigurator systems/b300_sxm.yaml): int8 is not the fp8
		// rate on Blackwell Ultra.
		{"b300 memory_bytes", float64(get("b300").MemoryBytes), 275040 * 1 << 20},
		{"b300 hbm", get("b300").HBMBandwidthGBps, 7750},
		{"b300 dense bf16", get("b300").DenseTFLOPS.BF16, 2250},
		{"b300 dense fp8", get("b300").DenseTFLOPS.FP8, 4500},
		{"b300 dense int8", get("b300").DenseTFLOPS.INT8, 153.5},
		{"b300 dense fp4", get("b300").DenseTFLOPS.FP4, 14000},
		{"b300 nvlink", get("b300").ScaleUp.BandwidthGBps, 1800},
		{"b300 tdp", get("b300").TDPWatts, 1100},
		{"rtx-pro-6000 memory_bytes", float64(get("rtx-pro-6000").MemoryBytes), 97887 * 1 << 20},
		{"b200 dense int8", get("b200").DenseTFLOPS.INT8, 4500},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if g := get("rtx-4090"); g.MemoryBytes != 25250627584 {
		t.Errorf("rtx-4090 memory_bytes = %d, want exactly 25250627584", g.MemoryBytes)
	}
}

func TestGPUFieldsSane(t *testing.T) {
	kinds := map[string]bool{"nvlink3": true, "nvlink4": true, "nvlink5": true, "infinity_fabric": true,
		"roce": true, "pcie4": true, "pcie5": true, "pcie6": true, "none": true}
	pcieBW := map[string]float64{"pcie4": 64, "pcie5": 128, "pcie6": 256}
	c := gpuTestCatalog(t)
	for _, g := range c.GPUs() {
		if !kinds[g.ScaleUp.Kind] {
			t.Errorf("%s: scale_up.kind %q unknown", g.ID, g.ScaleUp.Kind)
		}
		if !kinds[g.PCIe.Kind] || !strings.HasPrefix(g.PCIe.Kind, "pcie") {
			t.Errorf("%s: pcie.kind %q is not a PCIe generation", g.ID, g.PCIe.Kind)
		}
		for _, l := range []hardware.Link{g.ScaleUp, g.PCIe} {
			if want, ok := pcieBW[l.Kind]; ok && l.BandwidthGBps != want {
				t.Errorf("%s: %s bandwidth %v, want %v (x16 bidirectional)", g.ID, l.Kind, l.BandwidthGBps, want)
			}
		}
		if g.Name == "" || g.Vendor == "" || g.MemoryType == "" {
			t.Errorf("%s: name, vendor and memory_type are required", g.ID)
		}
		if g.TDPWatts <= 0 || g.PricePerGPUHourUSD <= 0 || g.MaxGPUsPerNode <= 0 {
			t.Errorf("%s: tdp_watts %v, price %v, max_gpus_per_node %d must be > 0",
				g.ID, g.TDPWatts, g.PricePerGPUHourUSD, g.MaxGPUsPerNode)
		}
	}
}

// numericLineRE matches a "key: number" line and captures what follows.
var numericLineRE = regexp.MustCompile(`^\s*[A-Za-z0-9_]+:\s*[-+]?[0-9][0-9_]*(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?(\s*#.*)?\s*$`)

// Every figure carries its source: a comment on its line or the line above.
func TestGPUFiguresCommented(t *testing.T) {
	for name, data := range gpuTestFiles(t) {
		lines := strings.Split(string(data), "\n")
		for i, line := range lines {
			m := numericLineRE.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			if strings.TrimSpace(m[1]) != "" {
				continue // trailing comment
			}
			if i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "#") {
				continue // comment on the line above
			}
			t.Errorf("%s:%d: figure without a source comment: %q", name, i+1, line)
		}
	}
}

const gpuFuzzBase = `id: test-gpu
name: Test GPU
vendor: test
aliases: [tg]
memory_bytes: 85520809984
memory_gb: 80
memory_type: HBM3
hbm_bandwidth_gbps: 3350
dense_tflops: {bf16: 989, fp16: 989, fp8: 1979, int8: 1979, fp4: 0}
sparse_tflops: {bf16: 1979, fp16: 1979, fp8: 3958, int8: 3958, fp4: 0}
scale_up: {kind: nvlink4, bandwidth_gbps: 900}
pcie: {kind: pcie5, bandwidth_gbps: 128}
tdp_watts: 700
price_per_gpu_hour_usd: 2.5
max_gpus_per_node: 8
`

func TestLoadGPUsErrors(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		wantField string // "" = no field expected
		wantIn    string
	}{
		{"ok", gpuFuzzBase, "", ""},
		{"unknown key", strings.Replace(gpuFuzzBase, "memory_gb:", "memory_gbs:", 1), "memory_gbs", "unknown key"},
		{"missing memory_bytes", strings.Replace(gpuFuzzBase, "memory_bytes: 85520809984\n", "", 1), "memory_bytes", "must be > 0"},
		{"wrong type", strings.Replace(gpuFuzzBase, "tdp_watts: 700", "tdp_watts: lots", 1), "", "cannot unmarshal"},
		{"swapped dense/sparse", strings.Replace(gpuFuzzBase, "sparse_tflops: {bf16: 1979", "sparse_tflops: {bf16: 500", 1), "sparse_tflops.bf16", "swapped"},
		{"not a mapping", "- a\n- b\n", "", "mapping"},
		{"empty", "", "", "no entries"},
		{"duplicate alias", gpuFuzzBase + "---\n" + strings.Replace(gpuFuzzBase, "id: test-gpu", "id: other-gpu", 1), "aliases", "already names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := New().LoadGPUs("x.yaml", strings.NewReader(tt.yaml))
			if tt.wantIn == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T), want *FileError", err, err)
			}
			if fe.File != "x.yaml" || fe.Field != tt.wantField || !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("error %q (field %q), want file x.yaml, field %q, containing %q", err, fe.Field, tt.wantField, tt.wantIn)
			}
		})
	}
}

func FuzzLoadGPUs(f *testing.F) {
	for _, data := range gpuTestFiles(f) {
		f.Add(data)
	}
	for _, s := range []string{
		gpuFuzzBase,
		strings.Replace(gpuFuzzBase, "memory_gb:", "memory_gbs:", 1),
		strings.Replace(gpuFuzzBase, "memory_bytes: 85520809984\n", "", 1),
		strings.Replace(gpuFuzzBase, "tdp_watts: 700", "tdp_watts: lots", 1),
		strings.Replace(gpuFuzzBase, "memory_bytes: 85520809984", "memory_bytes: 1e40", 1),
		strings.Replace(gpuFuzzBase, "aliases: [tg]", "aliases: {a: b}", 1),
		gpuFuzzBase + "---\n" + gpuFuzzBase,
		"---\n---\n",
		"- a\n- b\n",
		"id: [\n",
		"&a [*a]",
		"",
	} {
		f.Add([]byte(s))
	}
	const name = "fuzz.yaml"
	f.Fuzz(func(t *testing.T, data []byte) {
		c := New()
		err := c.LoadGPUs(name, bytes.NewReader(data))
		if err != nil {
			if _, ok := err.(*FileError); !ok {
				t.Fatalf("error %v is a %T, want *FileError", err, err)
			}
			if !strings.HasPrefix(err.Error(), name+":") {
				t.Fatalf("error %q does not start with %q", err, name+":")
			}
			return
		}
		if len(c.GPUs()) == 0 {
			t.Fatal("no error and no GPUs")
		}
		for _, g := range c.GPUs() {
			if err := g.Validate(); err != nil {
				t.Fatalf("loaded GPU %q fails Validate: %v", g.ID, err)
			}
		}
	})
}

// TestReferenceSystemsResolve: every GPU system named by the kernel tables
// (profiling/aiconfigurator/<system>/) and by the measured runs (the system
// column of silicon_vllm_agg.csv) is a catalog GPU whose memory matches
// the collector's nvidia-smi figure where it gives one.
func TestReferenceSystemsResolve(t *testing.T) {
	c := gpuTestCatalog(t)
	dir := refdata.Path(t, "profiling/aiconfigurator")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	systems := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "systems" {
			systems[e.Name()] = true
		}
	}
	f, err := os.Open(refdata.Path(t, "measured/aiconfigurator-silicon/silicon_vllm_agg.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := slices.Index(rows[0], "system")
	if col < 0 {
		t.Fatal("silicon_vllm_agg.csv has no system column")
	}
	for _, r := range rows[1:] {
		systems[r[col]] = true
	}
	if len(systems) < 5 {
		t.Fatalf("found only %d systems: %v", len(systems), systems)
	}
	smiRE := regexp.MustCompile(`mem_capacity:\s*(\d+)\s*#\s*(\d+)\s*MiB reported by nvidia-smi`)
	checked := 0
	for s := range systems {
		g, err := c.GPU(s)
		if err != nil {
			t.Errorf("system %q: %v", s, err)
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, "systems", s+".yaml"))
		if err != nil {
			continue // a measured-run system without a collector file
		}
		if m := smiRE.FindSubmatch(data); m != nil {
			mib, _ := strconv.ParseInt(string(m[2]), 10, 64)
			if g.MemoryBytes != mib<<20 {
				t.Errorf("system %q: catalog %s memory_bytes %d, nvidia-smi %d MiB = %d bytes", s, g.ID, g.MemoryBytes, mib, mib<<20)
			}
			checked++
		}
	}
	if checked < 2 {
		t.Errorf("compared the nvidia-smi memory of %d systems, want b300 and rtx_pro_6000_server at least", checked)
	}
}
