package sim

import (
	"reflect"
	"testing"
)

// A parked request must come back exactly as it went (every field, its
// segments included), and parking every request, in the API server and in
// the waiting queue, must change no report: on random engines, loads,
// shared prefixes, sessions (kept as themselves) and staged loads.
func TestParkedRequestsComeBackAsTheyWent(t *testing.T) {
	fromRecords := 0
	forSeeds(t, 24, 6, map[string]configGen{"engine": randomConfig}, func(t *testing.T, seed uint64, cfg Config) {
		if seed%2 == 0 {
			cfg.Workload.Warmup = 20
		}
		parked := map[int64]parkedCopy{}
		check := func(in, out *request, fromRecord bool) {
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
				fromRecords++
			} else if out != want.p {
				t.Fatalf("request %d was kept as itself and came back as another struct", out.serial)
			}
		}
		_, withPark := runWith(t, cfg, func(s *Simulator) {
			for _, rp := range s.ranks {
				rp.waiting.park.after, rp.waiting.park.check = 0, check
			}
			for _, in := range s.insts {
				in.toEngine.park.after, in.toEngine.park.check = 0, check
			}
		})
		_, held := runWith(t, cfg, func(s *Simulator) {
			for _, rp := range s.ranks {
				rp.waiting.park = nil
			}
			for _, in := range s.insts {
				in.toEngine.park = nil
			}
		})
		sameReports(t, withPark, held)
	})
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
	gens := map[string]configGen{"engine": randomConfig, "speculative": specRandomConfig, "trace": randomTraceConfig}
	forSeeds(t, 12, 4, gens, func(t *testing.T, _ uint64, cfg Config) {
		s, reused := runWith(t, cfg, nil)
		if len(s.pool.free) == 0 {
			t.Fatal("no struct was pooled")
		}
		_, fresh := runWith(t, cfg, func(s *Simulator) { s.pool.on = false })
		sameReports(t, reused, fresh)
	})
}
