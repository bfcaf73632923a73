package sim

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// The tight loop that applies runs of plain decodes (deliverRun) must
// record exactly what the general pass records: a token sink turns it off,
// so a run with one and a run without must agree on every inter-token gap
// (the exact ITL distributions, not only the rounded report) and on the
// report.
func TestDecodeRunsMatchTheGeneralPass(t *testing.T) {
	n := 12
	if testing.Short() {
		n = 4
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := randomConfig(t, seed)
			run := func(sink bool) (*Report, *metrics) {
				s, err := newSimulator(&cfg)
				if err != nil {
					t.Fatal(err)
				}
				if sink {
					WithTokenSink(func(float64, float64) {})(s)
				}
				rep, err := s.run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return rep, s.m
			}
			fast, mf := run(false)
			slow, ms := run(true)
			if !reflect.DeepEqual(mf.all.itl, ms.all.itl) {
				t.Fatalf("ITL distributions differ:\nruns    %+v\ngeneral %+v", mf.all.itl, ms.all.itl)
			}
			if mf.all.stalls != ms.all.stalls {
				t.Fatalf("stalls %d with runs, %d with the general pass", mf.all.stalls, ms.all.stalls)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("reports differ:\nruns    %+v\ngeneral %+v", fast, slow)
			}
		})
	}
}
