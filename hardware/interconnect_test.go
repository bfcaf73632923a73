package hardware

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func ndr() *Interconnect {
	return &Interconnect{ID: "infiniband-ndr", Scope: ScopeCluster, LineRateGBps: 50, AchievedFraction: 0.9, LatencyUS: 5}
}

func TestInterconnectByHand(t *testing.T) {
	// 400 Gb/s = 50 GB/s per direction, 90% achieved: 45 GB/s.
	if got := ndr().BandwidthGBps(); got != 45 {
		t.Errorf("NDR bandwidth %g GB/s, want 45", got)
	}
	nv := &Interconnect{ID: "nvlink4", Scope: ScopeNode, GPULink: "nvlink4", LineRateGBps: 450, AchievedFraction: 0.8}
	if why := nv.Joins(h100()); why != "" {
		t.Errorf("NVLink4 between H100s: %q", why)
	}
	l40s := &GPU{ID: "l40s", ScaleUp: Link{Kind: "pcie4"}}
	if why := nv.Joins(l40s); !strings.Contains(why, "nvlink4") || !strings.Contains(why, "l40s has pcie4") {
		t.Errorf("NVLink4 between L40S: %q", why)
	}
	if why := ndr().Joins(l40s); why != "" {
		t.Errorf("a cluster link joins any GPU: %q", why)
	}
}

func TestInterconnectValidateNamesTheField(t *testing.T) {
	if err := ndr().Validate(); err != nil {
		t.Fatal(err)
	}
	for field, bad := range map[string]func(l *Interconnect){
		"id":                func(l *Interconnect) { l.ID = "" },
		"scope":             func(l *Interconnect) { l.Scope = "rack" },
		"line_rate_gbps":    func(l *Interconnect) { l.LineRateGBps = math.Inf(1) },
		"achieved_fraction": func(l *Interconnect) { l.AchievedFraction = 1.2 },
		"latency_us":        func(l *Interconnect) { l.LatencyUS = math.NaN() },
	} {
		l := ndr()
		bad(l)
		var fe *FieldError
		if err := l.Validate(); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
}
