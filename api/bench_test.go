package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// Benchmarks over loopback against a real listener:
//
//	go test -bench . -run '^$' ./api
//
// BenchmarkCapacityLoad drives POST /v1/capacity at a fixed 500 requests/s
// for 3 s (open loop: a request leaves every 2 ms whatever the earlier ones
// do) and reports the achieved rate and the latency percentiles.
// BenchmarkSimulate1000 posts the default scenario with 1,000 requests.

const (
	loadRate     = 500 // requests per second
	loadDuration = 3 * time.Second
)

// benchServer serves on 127.0.0.1:0 until the benchmark ends.
func benchServer(b *testing.B) (url string, client *http.Client) {
	b.Helper()
	s := newTestServer(b, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	b.Cleanup(func() { stop(); <-done })
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	return "http://" + ln.Addr().String(), &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// post sends one request and drains the answer; it returns the latency.
func post(client *http.Client, url string, body []byte) (time.Duration, error) {
	start := time.Now()
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("POST %s: %s", url, resp.Status)
	}
	return time.Since(start), err
}

// percentile of sorted latencies, in ms.
func percentileMS(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := min(int(q*float64(len(sorted))), len(sorted)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}

func BenchmarkCapacityLoad(b *testing.B) {
	url, client := benchServer(b)
	url += "/v1/capacity"
	body := []byte(`{"model":"llama-3.1-70b","gpu":"h100-sxm","tp":4,"prompt_tokens":2048,"output_tokens":512}`)
	// Warm the connection pool.
	for range 20 {
		if _, err := post(client, url, body); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	var elapsed time.Duration
	var failed int
	for b.Loop() {
		lat, elapsed, failed = openLoop(client, url, body)
	}
	if failed > 0 {
		b.Fatalf("%d of %d requests failed", failed, len(lat)+failed)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "req/s")
	b.ReportMetric(percentileMS(lat, 0.50), "p50-ms")
	b.ReportMetric(percentileMS(lat, 0.99), "p99-ms")
	b.ReportMetric(percentileMS(lat, 1), "max-ms")
}

// openLoop sends loadRate requests per second for loadDuration, each from
// its own goroutine, and returns the latencies of those that succeeded.
func openLoop(client *http.Client, url string, body []byte) ([]time.Duration, time.Duration, int) {
	n := int(loadRate * loadDuration.Seconds())
	interval := time.Second / loadRate
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	failed := 0
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			d, err := post(client, url, body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			lat = append(lat, d)
		})
	}
	wg.Wait()
	return lat, time.Since(start), failed
}

func BenchmarkSimulate1000(b *testing.B) {
	url, client := benchServer(b)
	url += "/v1/simulate"
	body := []byte(`{"model":"llama-3.1-8b","gpu":"h100-sxm","workload":{"requests":1000}}`)
	var lat []time.Duration
	for b.Loop() {
		d, err := post(client, url, body)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, d)
	}
	slices.Sort(lat)
	b.ReportMetric(percentileMS(lat, 0.50), "p50-ms")
	b.ReportMetric(percentileMS(lat, 0.99), "p99-ms")
	var total time.Duration
	for _, d := range lat {
		total += d
	}
	b.ReportMetric(1000*float64(len(lat))/total.Seconds(), "simulated-requests/s")
}
