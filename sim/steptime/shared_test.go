package steptime

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/models"
)

// DeepSeek-V3's shared expert runs beside the routed experts in a decode
// step (up to SharedExpertsStreamTokens rows), in turn above it: the
// overlapped step is the serial one less the shorter of the two, Explain
// shows the hidden share, and GPUTime is Predict's GPU time either way.
func TestSharedExpertsOverlap(t *testing.T) {
	s, _ := deepSeekTP8(t)
	for _, c := range []struct {
		decodes int
		overlap bool
	}{{32, true}, {256, true}, {300, false}} {
		var b models.Batch
		for range c.decodes {
			b.AddDecode(1000, 0)
		}
		var shared, hidden float64
		for _, k := range s.Explain(&b) {
			if sharedExperts[strings.Fields(k.Name)[0]] {
				shared += k.Sec
				if strings.Contains(k.Name, "hidden behind the routed experts") {
					hidden++
				}
			}
		}
		full := s.sharedTime(b.Tokens(), false, 1, nil)
		moe := s.moeTime(s.groupTokens(&b), false, nil)
		p := s.Predict(&b)
		if got := s.GPUTime(&b); math.Abs(got-p.GPU) > 1e-9*p.GPU {
			t.Errorf("%d decodes: GPUTime %g, Predict %g", c.decodes, got, p.GPU)
		}
		switch {
		case c.overlap && (hidden != 2 || math.Abs(shared-math.Max(full-moe, 0)) > 1e-12):
			t.Errorf("%d decodes: shared experts %g s shown (%v marked hidden), want %g (their %g less the routed %g)", c.decodes, shared, hidden, math.Max(full-moe, 0), full, moe)
		case !c.overlap && (hidden != 0 || math.Abs(shared-full) > 1e-12):
			t.Errorf("%d decodes: shared experts %g s, want all %g in turn", c.decodes, shared, full)
		}
	}
}

// deepSeekTP8 is DeepSeek-V3 at its checkpoint's precision on 8 H200s,
// CUDA graphs up to 512 tokens, formula backend; and the model.
func deepSeekTP8(t *testing.T) (*Model, *models.Model) {
	t.Helper()
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("deepseek-v3")
	g, _ := cat.GPU("h200")
	s, err := New(m, g, m.DefaultPrecision(), 8, DefaultProfile(g), true)
	if err != nil {
		t.Fatal(err)
	}
	return s.WithCUDAGraphs(512), m
}
