package sim

import (
	"reflect"
	"testing"
)

// The tight loop that applies runs of plain decodes (deliverRun) must
// record exactly what the general pass records: a token sink turns it off,
// so a run with one and a run without must agree on every inter-token gap
// (the exact ITL distributions, not only the rounded report) and on the
// report.
func TestDecodeRunsMatchTheGeneralPass(t *testing.T) {
	forSeeds(t, 12, 4, map[string]configGen{"engine": randomConfig}, func(t *testing.T, _ uint64, cfg Config) {
		sf, fast := runWith(t, cfg, nil)
		ss, slow := runWith(t, cfg, func(s *Simulator) { WithTokenSink(func(float64, float64) {})(s) })
		mf, ms := sf.m, ss.m
		if !reflect.DeepEqual(mf.all.itl, ms.all.itl) {
			t.Fatalf("ITL distributions differ:\nruns    %+v\ngeneral %+v", mf.all.itl, ms.all.itl)
		}
		if mf.all.stalls != ms.all.stalls {
			t.Fatalf("stalls %d with runs, %d with the general pass", mf.all.stalls, ms.all.stalls)
		}
		sameReports(t, fast, slow)
	})
}
