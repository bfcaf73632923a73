package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/go-playground/validator/v10"
)

// Options are the server's collaborators.
type Options struct {
	// Engine answers the questions (required; NewDomain makes the real one).
	Engine Engine
	// Logger receives the access log and the errors (discarded when nil).
	Logger *slog.Logger
	// Abort, when closed during a shutdown, skips what is left of the drain
	// and of the grace period (`headroom serve` closes it on a second
	// SIGINT/SIGTERM).
	Abort <-chan struct{}
}

// Server is the REST API: handlers over an Engine, a job manager, metrics.
type Server struct {
	cfg      Config
	log      *slog.Logger
	engine   Engine
	jobs     *JobManager
	metrics  *metrics
	validate *validator.Validate
	router   *gin.Engine
	// cals keeps the calibrations of POST /v1/calibrations.
	cals *calibrationStore
	// ready is false once shutdown begins (GET /readyz then answers 503).
	ready atomic.Bool
	// tokenSum is the SHA-256 of auth_token (nil: no authentication).
	tokenSum []byte
	abort    <-chan struct{}
	// cpu is the CPU budget every simulation takes a slot of.
	cpu *budget
	// gate admits synchronous simulations.
	gate *syncGate
	// uploads bounds the calibration uploads held at once.
	uploads *uploadBudget
	// web is the web planner served at / (webapp.go).
	web *webApp
}

var ginMode sync.Once

// New builds a server; Serve or ListenAndServe runs it.
func New(cfg Config, opt Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opt.Engine == nil {
		return nil, errors.New("api: an Engine is required")
	}
	if d := cfg.KernelDBDir; d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return nil, &ConfigError{Key: "kernel_db_dir", Reason: fmt.Sprintf("kernel_db_dir: %s is not a directory (%s)", d, EnvName("kernel_db_dir"))}
		}
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	ginMode.Do(func() { gin.SetMode(gin.ReleaseMode) })
	s := &Server{cfg: cfg, log: opt.Logger, engine: opt.Engine, metrics: newMetrics(), tokenSum: tokenDigest(cfg.AuthToken), abort: opt.Abort}
	s.validate = newValidator(opt.Engine.Model)
	s.cpu = newBudget(cfg.Limits.Simulations)
	s.gate = &syncGate{max: cfg.Simulate.MaxConcurrent, slots: cfg.Limits.Simulations}
	s.uploads = &uploadBudget{size: cfg.Calibrations.UploadBudgetBytes}
	s.metrics.watch(s)
	s.jobs = NewJobManager(JobOptions{
		Workers: cfg.Jobs.Workers, QueueSize: cfg.Jobs.QueueSize, ResultTTL: cfg.Jobs.ResultTTL,
		MaxFinished: cfg.Jobs.MaxFinished, Timeout: cfg.Jobs.Timeout, Logger: opt.Logger,
		MaxResultBytes: cfg.Jobs.MaxResultBytes, MaxResultsBytes: cfg.Jobs.MaxResultsBytes,
		OnTransition: s.metrics.jobTransition,
	})
	s.jobs.Register("simulate", s.runSimulateJob, s.checkSimulateJob)
	s.registerPlannerJobs()
	s.jobs.Register("calibrate", s.runCalibrateJob, s.checkCalibrateJob)
	s.jobs.Register("validate", s.runValidateJob, s.checkValidateJob)
	cals, err := openCalibrationStore(cfg.CalibrationStore, cfg.Calibrations.MaxStored)
	if err != nil {
		return nil, err
	}
	s.cals = cals
	if s.web, err = embeddedWebApp(); err != nil {
		return nil, err
	}
	s.router = s.routes()
	s.ready.Store(true)
	return s, nil
}

// Close releases the calibration store (its file lock). Serve closes it
// when it returns; a server used through Handler closes it here. Requests
// that need the store fail after Close.
func (s *Server) Close() error { return s.cals.close() }

// Jobs is the job manager, for registering more kinds before Serve.
func (s *Server) Jobs() *JobManager { return s.jobs }

// Handler is the HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.router }

// ListenAndServe listens on the configured address and serves until ctx
// ends; see Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends, then shuts down in three steps:
//
//  1. drain: /readyz answers 503, new jobs are refused (503) and queued
//     ones are cancelled (each logged, and listed as cancelled), while the
//     listener stays open for shutdown_drain so that load balancers see the
//     probe fail and stop sending requests;
//  2. grace: the listener closes, running requests and jobs get
//     shutdown_grace to finish;
//  3. what still runs is cancelled (those requests answer 503, those jobs
//     end cancelled).
//
// Closing Options.Abort skips what is left of steps 1 and 2. Serve closes
// the server when it returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer s.Close()
	base, cancelBase := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelBase()
	srv := &http.Server{
		Handler:           s.router,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.jobs.Start()
	s.log.Info("serving", "addr", ln.Addr().String(), "workers", s.cfg.Jobs.Workers, "queue", s.cfg.Jobs.QueueSize,
		"authentication", s.tokenSum != nil)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.ready.Store(false)
		s.jobs.Shutdown(context.Background())
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.ready.Store(false)
	s.jobs.Drain()
	if d := s.cfg.ShutdownDrain; d > 0 {
		s.log.Info("draining: /readyz answers 503, new jobs are refused", "drain", d)
		select {
		case <-time.After(d):
		case <-s.abort:
		case err := <-errc:
			errc <- err
		}
	}
	s.log.Info("shutting down", "grace", s.cfg.ShutdownGrace)
	grace, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	go func() {
		select {
		case <-s.abort:
			cancel()
		case <-grace.Done():
		}
	}()
	var wg sync.WaitGroup
	wg.Go(func() { s.jobs.Shutdown(grace) })
	err := srv.Shutdown(grace)
	if err != nil {
		// Grace is over: cancel what runs, give handlers a moment to answer.
		cancelBase()
		last, cancelLast := context.WithTimeout(context.Background(), 2*time.Second)
		err = srv.Shutdown(last)
		cancelLast()
		if err != nil {
			err = srv.Close()
		}
	}
	wg.Wait()
	<-errc
	s.log.Info("stopped")
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// routes wires the handlers.
func (s *Server) routes() *gin.Engine {
	r := gin.New()
	r.HandleMethodNotAllowed = true
	r.ContextWithFallback = true
	r.Use(s.metrics.middleware, s.accessLog, s.recover, s.authenticate, s.limitBody)
	r.NoRoute(func(c *gin.Context) { s.fail(c, notFound("no route %s %s", c.Request.Method, c.Request.URL.Path)) })
	r.NoMethod(func(c *gin.Context) {
		s.fail(c, fmt.Errorf("%w: %s %s", errMethod, c.Request.Method, c.Request.URL.Path))
	})

	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	r.GET("/metrics", s.metricsPage)
	r.GET("/openapi.json", s.openapiJSON)
	r.GET("/docs", func(c *gin.Context) { c.Redirect(http.StatusFound, "/docs/index.html") })
	r.GET("/docs/*any", s.docs())
	s.routeWebApp(r, s.web)

	v1 := r.Group("/v1")
	v1.GET("/gpus", s.listGPUs)
	v1.GET("/gpus/:id", s.getGPU)
	v1.GET("/models", s.listModels)
	v1.GET("/models/*id", s.getModel)
	v1.POST("/models", s.addModel)
	v1.DELETE("/models/*id", s.deleteModel)
	v1.POST("/capacity", s.capacity)
	v1.POST("/simulate", s.simulate)
	v1.POST("/steptime", s.steptime)
	v1.POST("/jobs", s.submitJob)
	v1.GET("/jobs", s.listJobs)
	v1.GET("/jobs/:id", s.getJob)
	v1.DELETE("/jobs/:id", s.cancelJob)
	v1.POST("/rate-profile", s.rateProfile)
	v1.POST("/inspect", s.inspect)
	v1.POST("/validate", s.validateRun)
	v1.POST("/calibrations", s.createCalibration)
	v1.GET("/calibrations", s.listCalibrations)
	v1.GET("/calibrations/:id", s.getCalibration)
	v1.DELETE("/calibrations/:id", s.deleteCalibration)
	return r
}

// uploadRoutes take benchmark runs and traces: their bodies may be up to
// calibrations.upload_limit_bytes.
var uploadRoutes = map[string]bool{"/v1/calibrations": true, "/v1/inspect": true, "/v1/validate": true, "/v1/rate-profile": true}

// limitBody caps request bodies at body_limit_bytes, uploads of benchmark
// runs and traces (POST /v1/calibrations, /v1/inspect, /v1/validate,
// /v1/rate-profile) at
// calibrations.upload_limit_bytes (413 beyond).
func (s *Server) limitBody(c *gin.Context) {
	limit := s.cfg.BodyLimitBytes
	if c.Request.Method == http.MethodPost && uploadRoutes[c.FullPath()] {
		limit = s.cfg.Calibrations.UploadLimitBytes
	}
	if c.Request.ContentLength > limit {
		s.fail(c, &bodyTooLargeError{limit: limit})
		return
	}
	if c.Request.Body != nil {
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, limit)
	}
	c.Next()
}

// recover turns a handler panic into a logged 500 problem.
func (s *Server) recover(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p)
			}
			s.log.Error("handler panicked", "method", c.Request.Method, "path", c.Request.URL.Path,
				"panic", p, "stack", string(debug.Stack()))
			p, _ := problemFor(errors.New("panic"))
			writeProblem(c, p)
		}
	}()
	c.Next()
}

// accessLog logs each request once it is answered.
func (s *Server) accessLog(c *gin.Context) {
	start := time.Now()
	c.Next()
	s.log.LogAttrs(c.Request.Context(), slog.LevelDebug, "request",
		slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path),
		slog.Int("status", c.Writer.Status()), slog.Duration("duration", time.Since(start)))
}
