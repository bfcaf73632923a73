package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// progressBar draws a progress bar on w (nil when off). The planner reports
// from several goroutines: the bar serialises its writes, never draws a
// smaller fraction than it has drawn, and ends its line once, at 100%.
func progressBar(w io.Writer, on bool, label string) func(float64) {
	if !on {
		return nil
	}
	var (
		mu   sync.Mutex
		last = -1.0
		done bool
	)
	return func(f float64) {
		mu.Lock()
		defer mu.Unlock()
		f = min(max(f, 0), 1)
		if done || f < last {
			return
		}
		last = f
		n := int(f * 30)
		fmt.Fprintf(w, "\r%s [%s%s] %3.0f%%", label, strings.Repeat("#", n), strings.Repeat(".", 30-n), 100*f)
		if f >= 1 {
			done = true
			fmt.Fprintln(w)
		}
	}
}
