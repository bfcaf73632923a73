package calibrate

import (
	"context"
	"strings"
	"testing"
)

// TestCheckHostDefaultsRefuses: a table without the joint row, or a
// host.json that is not the joint row's fit, is refused before anything
// is simulated; a re-scored figure that moved is named.
func TestCheckHostDefaultsRefuses(t *testing.T) {
	h := SourcedHost()
	other := h
	other.CPU.StepOverheadUS++
	for _, c := range []struct {
		name string
		rows []FamilyRow
		want string
	}{
		{"no joint row", []FamilyRow{{FitOn: FitOnStart, Host: h}}, "no row of the defaults"},
		{"another host", []FamilyRow{{FitOn: FitOnAll, Host: other}}, "host.json is not host-families' \"all\" row"},
	} {
		_, err := CheckHostDefaults(context.Background(), &HostCases{}, c.rows, h)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	rec := []FamilyFigures{{Family: FamilyOpenLoop, N: 3, Loss: 0.1, Metrics: map[string]MetricErrors{"ttft_ms.p50": {N: 3, MedianAbsPct: 5}}}}
	moved := []FamilyFigures{{Family: FamilyOpenLoop, N: 3, Loss: 0.1, Metrics: map[string]MetricErrors{"ttft_ms.p50": {N: 3, MedianAbsPct: 5.001}}}}
	if err := sameFigures(rec, rec); err != nil {
		t.Errorf("the same figures: %v", err)
	}
	if err := sameFigures(moved, rec); err == nil || !strings.Contains(err.Error(), "open-loop ttft_ms.p50") {
		t.Errorf("a moved figure: err %v, want it named", err)
	}
	if err := sameFigures(nil, rec); err == nil {
		t.Error("no family scored: accepted")
	}
}
