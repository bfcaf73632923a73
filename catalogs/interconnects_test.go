package catalogs

import (
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/internal/testkit/refdata"
)

func TestInterconnectCatalogLoads(t *testing.T) {
	ic, err := BuiltinInterconnects()
	if err != nil {
		t.Fatal(err)
	}
	// The links disaggregated serving is deployed on, with their
	// per-GPU, per-direction line rates.
	for id, rate := range map[string]float64{
		"nvlink3": 300, "nvlink4": 450, "nvlink5": 900, "pcie5": 64,
		"infiniband-hdr": 25, "infiniband-ndr": 50, "infiniband-xdr": 100, "roce-200": 25, "roce-400": 50,
	} {
		l, err := ic.Get(id)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		if l.LineRateGBps != rate {
			t.Errorf("%s: line rate %g GB/s, want %g", id, l.LineRateGBps, rate)
		}
	}
	l, err := ic.Get("IB-NDR")
	if err != nil || l.ID != "infiniband-ndr" {
		t.Errorf("alias IB-NDR: %v, %v", l, err)
	}
	if got := l.BandwidthGBps(); math.Abs(got-34) > 1e-9 {
		t.Errorf("NDR achieved bandwidth %g GB/s, want 50 × 0.68 = 34", got)
	}
	_, err = ic.Get("infiniband-nrd")
	if !errors.Is(err, ErrUnknownInterconnect) || !strings.Contains(err.Error(), "infiniband-ndr") {
		t.Errorf("misspelt id: %v, want ErrUnknownInterconnect suggesting infiniband-ndr", err)
	}
}

// Every node link must be some catalog GPU's scale-up link, or no GPU
// could use it.
func TestInterconnectNodeLinksMatchGPUs(t *testing.T) {
	ic, err := BuiltinInterconnects()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, g := range gpuTestCatalog(t).GPUs() {
		kinds[g.ScaleUp.Kind] = true
	}
	for _, l := range ic.All() {
		if l.Scope == hardware.ScopeNode && !kinds[l.GPULink] {
			t.Errorf("%s: no catalog GPU has scale_up.kind %q", l.ID, l.GPULink)
		}
	}
	h100, _ := gpuTestCatalog(t).GPU("h100-sxm")
	nv4, _ := ic.Get("nvlink4")
	nv5, _ := ic.Get("nvlink5")
	ndr, _ := ic.Get("infiniband-ndr")
	if r := nv4.Joins(h100); r != "" {
		t.Errorf("nvlink4 refuses the H100: %s", r)
	}
	if r := nv5.Joins(h100); r == "" {
		t.Error("nvlink5 joins H100s, whose link is nvlink4")
	}
	if r := ndr.Joins(h100); r != "" {
		t.Errorf("a cluster link refuses a GPU: %s", r)
	}
}

// Every figure carries its source on its line.
func TestInterconnectFiguresHaveSources(t *testing.T) {
	figure := regexp.MustCompile(`^(line_rate_gbps|achieved_fraction|latency_us):`)
	for i, line := range strings.Split(string(interconnectsYAML), "\n") {
		if figure.MatchString(line) && !strings.Contains(line, "#") {
			t.Errorf("interconnects.yaml:%d: %q has no source comment", i+1, line)
		}
	}
}

func TestInterconnectCatalogRejectsBadEntries(t *testing.T) {
	for _, tc := range []struct{ name, doc, field string }{
		{"unknown key", "id: x\nscope: node\nline_rate_gbps: 1\nachieved_fraction: 1\nlatency_us: 1\nbandwith: 2\n", "bandwith"},
		{"scope", "id: x\nscope: rack\nline_rate_gbps: 1\nachieved_fraction: 1\nlatency_us: 1\n", "scope"},
		{"zero rate", "id: x\nscope: cluster\nline_rate_gbps: 0\nachieved_fraction: 1\nlatency_us: 1\n", "line_rate_gbps"},
		{"fraction above 1", "id: x\nscope: cluster\nline_rate_gbps: 10\nachieved_fraction: 1.5\nlatency_us: 1\n", "achieved_fraction"},
		{"negative latency", "id: x\nscope: cluster\nline_rate_gbps: 10\nachieved_fraction: 0.5\nlatency_us: -1\n", "latency_us"},
		{"duplicate name", "id: x\nscope: cluster\nline_rate_gbps: 10\nachieved_fraction: 0.5\nlatency_us: 1\n---\nid: y\naliases: [X]\nscope: cluster\nline_rate_gbps: 10\nachieved_fraction: 0.5\nlatency_us: 1\n", "aliases"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadInterconnects("links.yaml", strings.NewReader(tc.doc))
			var fe *FileError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("got %v, want a FileError on field %s", err, tc.field)
			}
		})
	}
}

// The measured fractions and latencies are what vidur's NCCL send/recv
// profiles give, fitted as the catalog's comment says.
func TestInterconnectMeasuredFiguresMatchVidur(t *testing.T) {
	dir := refdata.Path(t, "profiling/vidur/network")
	ic, err := BuiltinInterconnects()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		link, file  string
		devsPerNode string
	}{
		{"nvlink3", "a100_dgx/send_recv.csv", "2"},
		{"nvlink4", "h100_dgx/send_recv.csv", "2"},
		{"infiniband-ndr", "h100_dgx/send_recv.csv", "1"},
	} {
		t.Run(tc.link, func(t *testing.T) {
			bw, lat := fitSendRecv(t, filepath.Join(dir, tc.file), tc.devsPerNode)
			l, err := ic.Get(tc.link)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.BandwidthGBps(); math.Abs(got-bw)/bw > 0.01 {
				t.Errorf("achieved %g GB/s, vidur's fit %g GB/s", got, bw)
			}
			if math.Abs(l.LatencyUS-lat) > 0.5 {
				t.Errorf("latency %g µs, vidur's 2 KiB median %g µs", l.LatencyUS, lat)
			}
		})
	}
}

// fitSendRecv fits time = a + bytes/bw over the 8–64 MB messages of one
// vidur profile and returns bw (GB/s) and the median time of a 2 KiB
// message (µs).
func fitSendRecv(t *testing.T, path, devsPerNode string) (bwGBps, smallUS float64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var n, sx, sy, sxx, sxy float64
	for _, r := range rows[1:] {
		if r[col["devices_per_node"]] != devsPerNode {
			continue
		}
		size, _ := strconv.ParseFloat(r[col["size"]], 64)
		ms, _ := strconv.ParseFloat(r[col["time_stats.send_recv.median"]], 64)
		if size == 2048 {
			smallUS = ms * 1000
		}
		if size >= 8<<20 {
			x, y := size, ms/1000
			n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
		}
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
	return 1 / slope / 1e9, smallUS
}
