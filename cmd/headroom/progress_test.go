package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestProgressBarConcurrent draws from several goroutines onto a writer
// that is not safe for concurrent use: the bar must serialise (the race
// detector checks), keep its fractions rising, and end its line once.
func TestProgressBarConcurrent(t *testing.T) {
	var b bytes.Buffer
	bar := progressBar(&b, true, "sweep")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				bar(float64(g*200+i) / 800)
			}
			bar(1)
		})
	}
	wg.Wait()
	out := b.String()
	if n := strings.Count(out, "\n"); n != 1 || !strings.HasSuffix(out, "100%\n") {
		t.Fatalf("want one line ending at 100%%, got %d newlines, tail %q", n, out[max(0, len(out)-60):])
	}
	prev := -1
	for _, frame := range strings.Split(strings.TrimSpace(out), "\r") {
		if frame == "" {
			continue
		}
		n := strings.Count(frame, "#")
		if n < prev {
			t.Fatalf("the bar went back from %d to %d", prev, n)
		}
		prev = n
	}
	if bar := progressBar(&b, false, "x"); bar != nil {
		t.Fatal("a bar that is off must be nil")
	}
}
