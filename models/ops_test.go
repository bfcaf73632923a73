package models

import "testing"

// AddDecodes must leave the batch as the AddDecode calls it stands for,
// whatever else the batch holds.
func TestAddDecodesIsAddDecodeRepeated(t *testing.T) {
	cases := []struct {
		name   string
		ctxs   []int
		window int
	}{
		{"no window", []int{1, 17, 4096, 513}, 0},
		{"sliding window", []int{1, 17, 4096, 513}, 1024},
		{"window larger than every context", []int{3, 9}, 1 << 20},
		{"none", nil, 512},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var one, all Batch
			one.AddPrefill(100, 20, c.window, true)
			all.AddPrefill(100, 20, c.window, true)
			sum, swa := 0, 0
			for _, ctx := range c.ctxs {
				one.AddDecode(ctx, c.window)
				sum += ctx
				swa += min(ctx, c.window)
			}
			if c.window <= 0 {
				swa = 0
			}
			all.AddDecodes(len(c.ctxs), sum, swa)
			if one != all {
				t.Fatalf("AddDecodes gave %+v, AddDecode calls %+v", all, one)
			}
		})
	}
}
