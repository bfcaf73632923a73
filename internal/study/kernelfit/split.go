package kernelfit

import (
	"sort"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// The split of every table into a fit half and a held-out half, by fixed
// rules on the measured grid (not at random, so the halves are the same
// on every run and every machine):
//
//   - GEMM: the (n, k) sites form a grid; a site is fitted when the sum of
//     its n and k grid indices is even (a checkerboard), held out when odd.
//     Held-out sites are shapes the fit never saw.
//   - Attention (prefill and decode): within each head configuration, the
//     (batch, length) grid is split the same way.
//   - Fused MoE: the model shapes (hidden, intermediate, top-k, experts)
//     alternate in sorted order: half of the architectures are held out
//     whole, every TP/EP split and token count of them.
//   - Collectives: the message sizes of each (op, GPU count) alternate.

func indexOf(sorted []int, v int) int { return sort.SearchInts(sorted, v) }

func distinct(vs []int) []int {
	m := map[int]bool{}
	for _, v := range vs {
		m[v] = true
	}
	out := make([]int, 0, len(m))
	for v := range m {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

// splitGEMM divides a format's points into fit and held-out halves.
func splitGEMM(pts []steptime.GEMMPoint) (fit, hold []steptime.GEMMPoint) {
	var ns, ks []int
	for _, p := range pts {
		ns, ks = append(ns, p.N), append(ks, p.K)
	}
	ns, ks = distinct(ns), distinct(ks)
	for _, p := range pts {
		if (indexOf(ns, p.N)+indexOf(ks, p.K))%2 == 0 {
			fit = append(fit, p)
		} else {
			hold = append(hold, p)
		}
	}
	return fit, hold
}

// splitAttention divides attention points by their (batch, length)
// checkerboard within each head configuration.
func splitAttention(pts []steptime.AttentionPoint) (fit, hold []steptime.AttentionPoint) {
	var bs, ls []int
	for _, p := range pts {
		bs, ls = append(bs, p.Batch), append(ls, p.Len)
	}
	bs, ls = distinct(bs), distinct(ls)
	for _, p := range pts {
		if (indexOf(bs, p.Batch)+indexOf(ls, p.Len))%2 == 0 {
			fit = append(fit, p)
		} else {
			hold = append(hold, p)
		}
	}
	return fit, hold
}

type moeShape struct{ h, inter, topk, experts int }

// splitMoE holds out every other model shape whole.
func splitMoE(pts []steptime.MoEPoint) (fit, hold []steptime.MoEPoint) {
	set := map[moeShape]bool{}
	for _, p := range pts {
		set[moeShape{p.Key.Hidden, p.Key.Inter, p.Key.TopK, p.Key.Experts}] = true
	}
	shapes := make([]moeShape, 0, len(set))
	for s := range set {
		shapes = append(shapes, s)
	}
	sort.Slice(shapes, func(i, j int) bool {
		a, b := shapes[i], shapes[j]
		switch {
		case a.h != b.h:
			return a.h < b.h
		case a.inter != b.inter:
			return a.inter < b.inter
		case a.experts != b.experts:
			return a.experts < b.experts
		}
		return a.topk < b.topk
	})
	idx := map[moeShape]int{}
	for i, s := range shapes {
		idx[s] = i
	}
	for _, p := range pts {
		if idx[moeShape{p.Key.Hidden, p.Key.Inter, p.Key.TopK, p.Key.Experts}]%2 == 0 {
			fit = append(fit, p)
		} else {
			hold = append(hold, p)
		}
	}
	return fit, hold
}

// splitComm alternates the message sizes of each curve.
func splitComm(pts []steptime.CommPoint) (fit, hold []steptime.CommPoint) {
	type key struct {
		op          string
		nccl, eager bool
		gpus        int
	}
	seen := map[key]int{}
	for _, p := range pts {
		k := key{p.Op, p.NCCL, p.Eager, p.GPUs}
		if seen[k]%2 == 0 {
			fit = append(fit, p)
		} else {
			hold = append(hold, p)
		}
		seen[k]++
	}
	return fit, hold
}
