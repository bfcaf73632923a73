package sim

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// The tests that check that a shortcut changes nothing (decode runs, late
// block registration, parking, the request pool) run random configurations
// twice, with the shortcut and without, and compare what they report.

// configGen makes a random configuration from a seed.
type configGen func(*testing.T, uint64) Config

// forSeeds runs f as a subtest on seeds 1 to n (short with -short) of each
// generator.
func forSeeds(t *testing.T, n, short int, gens map[string]configGen, f func(t *testing.T, seed uint64, cfg Config)) {
	if testing.Short() {
		n = short
	}
	for name, gen := range gens {
		for seed := uint64(1); seed <= uint64(n); seed++ {
			t.Run(fmt.Sprint(name, "/", seed), func(t *testing.T) { f(t, seed, gen(t, seed)) })
		}
	}
}

// runWith runs cfg after set (if any) has adjusted the simulator.
func runWith(t *testing.T, cfg Config, set func(*Simulator)) (*Simulator, *Report) {
	t.Helper()
	s, err := newSimulator(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(s)
	}
	rep, err := s.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s, rep
}

// sameReports fails unless the run with the shortcut (a) and the one
// without (b) report the same.
func sameReports(t *testing.T, a, b *Report) {
	t.Helper()
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("reports differ:\nwith    %+v\nwithout %+v", a, b)
	}
}
