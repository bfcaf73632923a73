package workers

import (
	"runtime"
	"sync"
)

// For runs job(0) … job(n-1) on at most workers goroutines (GOMAXPROCS
// when workers <= 0), handing out indices in order, and returns when all
// have returned.
func For(n, workers int, job func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				job(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
