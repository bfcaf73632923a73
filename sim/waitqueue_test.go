package sim

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// A parked request must come back exactly as it went (every field, its
// segments included), and parking every arrival must change no report: on
// random engines, loads, shared prefixes, sessions (kept as themselves)
// and staged loads.
func TestParkedRequestsComeBackAsTheyWent(t *testing.T) {
	n := 24
	if testing.Short() {
		n = 6
	}
	fromRecords := 0
	for seed := uint64(1); seed <= uint64(n); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := randomConfig(t, seed)
			if seed%2 == 0 {
				cfg.Workload.Warmup = 20
			}
			run := func(park bool) (*Report, int) {
				s, err := newSimulator(&cfg)
				if err != nil {
					t.Fatal(err)
				}
				parked := map[int64]parkedCopy{}
				rebuilt := 0
				for _, rp := range s.replicas {
					if !park {
						rp.waiting.park = nil
						continue
					}
					p := rp.waiting.park
					p.after = 0
					p.check = func(in, out *request, fromRecord bool) {
						if in != nil {
							c := *in
							c.segs = append([]segment(nil), in.segs...)
							parked[in.serial] = parkedCopy{c, in}
							return
						}
						want, ok := parked[out.serial]
						if !ok {
							t.Fatalf("request %d came back, never parked", out.serial)
						}
						delete(parked, out.serial)
						if !reflect.DeepEqual(*out, want.r) {
							t.Fatalf("request %d parked as\n%+v\ncame back as\n%+v", out.serial, want.r, *out)
						}
						if fromRecord {
							rebuilt++
						} else if out != want.p {
							t.Fatalf("request %d was kept as itself and came back as another struct", out.serial)
						}
					}
				}
				rep, err := s.run(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				return rep, rebuilt
			}
			withPark, rebuilt := run(true)
			without, _ := run(false)
			fromRecords += rebuilt
			if !reflect.DeepEqual(withPark, without) {
				t.Fatalf("reports differ:\nparked %+v\nheld   %+v", withPark, without)
			}
		})
	}
	if fromRecords == 0 {
		t.Fatal("no request was rebuilt from its record")
	}
}

type parkedCopy struct {
	r request
	p *request
}

// Handing finished requests' structs to new ones (reqPool) must change no
// report: a struct still named by anything the run reads would show.
func TestReusedRequestsChangeNothing(t *testing.T) {
	n := 12
	if testing.Short() {
		n = 4
	}
	cases := map[string]func(*testing.T, uint64) Config{
		"engine": randomConfig, "speculative": specRandomConfig, "trace": randomTraceConfig,
	}
	for name, gen := range cases {
		for seed := uint64(1); seed <= uint64(n); seed++ {
			t.Run(fmt.Sprint(name, "/", seed), func(t *testing.T) {
				cfg := gen(t, seed)
				run := func(reuse bool) (*Report, int) {
					s, err := newSimulator(&cfg)
					if err != nil {
						t.Fatal(err)
					}
					s.pool.on = reuse
					rep, err := s.run(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					return rep, len(s.pool.free)
				}
				reused, pooled := run(true)
				fresh, _ := run(false)
				if pooled == 0 {
					t.Fatal("no struct was pooled")
				}
				if !reflect.DeepEqual(reused, fresh) {
					t.Fatalf("reports differ:\nreused %+v\nfresh  %+v", reused, fresh)
				}
			})
		}
	}
}
