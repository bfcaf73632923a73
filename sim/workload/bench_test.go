package workload

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func BenchmarkParseTrace(b *testing.B) {
	for _, fx := range fixtures[:5] {
		data := readFixture(b, fx.file)
		b.Run(fx.format+"/"+fx.file, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			n := 0
			for b.Loop() {
				recs, err := ParseTrace(bytes.NewReader(data), fx.format, fx.file)
				if err != nil {
					b.Fatal(err)
				}
				n += len(recs)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func BenchmarkLengthSampler(b *testing.B) {
	specs := []LengthSpec{
		{Type: LengthNormal, Mean: 512, Stddev: 128, Min: 16, Max: 2048},
		{Type: LengthLognormal, Mean: 512, Stddev: 512},
		{Type: LengthBuckets, Buckets: []Bucket{{Weight: 1, Min: 1, Max: 100}, {Weight: 2, Min: 100, Max: 1000}, {Weight: 1, Min: 1000, Max: 8000}}},
	}
	for _, s := range specs {
		b.Run(s.Type, func(b *testing.B) {
			smp, err := NewLengthSampler(s, "x", nil)
			if err != nil {
				b.Fatal(err)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				smp.Sample(r)
			}
		})
	}
}
