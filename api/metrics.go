package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the server's Prometheus series, on a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	jobs     *prometheus.GaugeVec
	simReqs  *prometheus.CounterVec
	simSpeed *prometheus.HistogramVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "headroom_http_requests_total",
			Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "headroom_http_request_duration_seconds",
			Help:    "HTTP request latency by route template, method and status code.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method", "status"}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "headroom_jobs",
			Help: "Jobs held by the server, by state (finished ones until their TTL).",
		}, []string{"state"}),
		simReqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "headroom_simulated_requests_total",
			Help: "Requests simulated, by mode (sync or job); rate() gives simulated requests per second.",
		}, []string{"mode"}),
		simSpeed: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "headroom_simulation_speed_requests_per_second",
			Help:    "Simulated requests per wall-clock second of each run, by mode.",
			Buckets: prometheus.ExponentialBuckets(1000, 4, 10),
		}, []string{"mode"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.jobs, m.simReqs, m.simSpeed,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, s := range JobStates {
		m.jobs.WithLabelValues(string(s))
	}
	return m
}

// watch adds the gauges read from the server when scraped: the CPU
// budget's slots in use, the simulations waiting for one, and the
// synchronous simulations in flight.
func (m *metrics) watch(s *Server) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "headroom_simulation_slots",
			Help: "Size of the CPU budget (limits.simulations): the most simulations that run at once.",
		}, func() float64 { return float64(s.cfg.Limits.Simulations) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "headroom_simulations_running",
			Help: "Simulations running now, synchronous and in jobs (slots of the CPU budget in use).",
		}, func() float64 { used, _ := s.cpu.stats(); return float64(used) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "headroom_simulations_waiting",
			Help: "Simulations waiting for a slot of the CPU budget.",
		}, func() float64 { _, w := s.cpu.stats(); return float64(w) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "headroom_sync_simulations_in_flight",
			Help: "Synchronous simulations admitted and not finished (at most simulate.max_concurrent).",
		}, func() float64 { return float64(s.gate.inFlightNow()) }),
	)
}

// jobTransition keeps headroom_jobs in step with the job manager.
func (m *metrics) jobTransition(_ string, from, to JobState) {
	if from != "" {
		m.jobs.WithLabelValues(string(from)).Dec()
	}
	if to != "" {
		m.jobs.WithLabelValues(string(to)).Inc()
	}
}

// simulated records one finished run.
func (m *metrics) simulated(mode string, requests int, wall time.Duration) {
	m.simReqs.WithLabelValues(mode).Add(float64(requests))
	if s := wall.Seconds(); s > 0 {
		m.simSpeed.WithLabelValues(mode).Observe(float64(requests) / s)
	}
}

// middleware counts and times every request by its route template.
func (m *metrics) middleware(c *gin.Context) {
	start := time.Now()
	c.Next()
	route := c.FullPath()
	if route == "" {
		route = "unmatched"
	}
	status := strconv.Itoa(c.Writer.Status())
	method := c.Request.Method
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		method = "OTHER" // keeps the label set bounded
	}
	m.requests.WithLabelValues(route, method, status).Inc()
	m.latency.WithLabelValues(route, method, status).Observe(time.Since(start).Seconds())
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}
