package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
)

// Bodies and uploads. A request's body is read before the request takes
// any slot (a synchronous simulation's admission, the CPU budget), within
// body_read_timeout: a client trickling its body holds a connection, never
// a slot another request waits for. An upload to POST /v1/calibrations
// first reserves its size in the upload budget (calibrations
// .upload_budget_bytes), then is read, and keeps what it holds (the file,
// then the imported run, never both for long) reserved until its fit ends,
// synchronously or as a queued job: uploads together never hold more.

// errBodyTimeout marks a body not sent within body_read_timeout (408).
var errBodyTimeout = errors.New("the request body was not sent in time")

// readDeadline gives the client body_read_timeout to send the body;
// clear ends it, once the body is in (the server's background read of a
// running request's connection must not hit it). A body that failed keeps
// it: the server discards what is left of it before answering, and an
// endless trickle must not hold it there. A writer that cannot set
// deadlines (a test recorder) reads without one.
func (s *Server) readDeadline(c *gin.Context) (clear func()) {
	rc := http.NewResponseController(c.Writer)
	if err := rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout)); err != nil {
		return func() {}
	}
	return func() { _ = rc.SetReadDeadline(time.Time{}) }
}

// bodyError words a body read that failed: past the deadline it is
// errBodyTimeout; other errors pass.
func (s *Server) bodyError(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("%w: body_read_timeout is %s", errBodyTimeout, s.cfg.BodyReadTimeout)
	}
	return err
}

// readBody reads the whole body within body_read_timeout; the limit
// middleware has capped it, so an over-long body fails with
// *http.MaxBytesError.
func (s *Server) readBody(c *gin.Context) ([]byte, error) {
	if c.Request.Body == nil {
		return nil, nil
	}
	clear := s.readDeadline(c)
	b, err := io.ReadAll(c.Request.Body)
	if err != nil {
		return nil, s.bodyError(err)
	}
	clear()
	return b, nil
}

// uploadBudget is the bytes uploads may hold at once.
type uploadBudget struct {
	mu   sync.Mutex
	size int64
	used int64
	// meanS is a moving average of how long a reservation is held, for
	// Retry-After.
	meanS float64
}

// uploadHold is one reservation in the budget.
type uploadHold struct {
	b     *uploadBudget
	n     int64
	start time.Time
	once  sync.Once
}

// reserve takes n bytes, or answers *BusyError when they do not fit.
func (b *uploadBudget) reserve(n int64) (*uploadHold, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.size {
		ra := int(min(max(b.meanS, 1), 300))
		return nil, &BusyError{RetryAfterS: ra, Reason: fmt.Sprintf("the uploads held now (%d bytes) leave no room for %d more within calibrations.upload_budget_bytes (%d)", b.used, n, b.size)}
	}
	b.used += n
	return &uploadHold{b: b, n: n, start: time.Now()}, nil
}

// shrink lowers the reservation to n bytes (once the body is read, to
// what it holds).
func (u *uploadHold) shrink(n int64) {
	u.b.mu.Lock()
	defer u.b.mu.Unlock()
	if n < u.n {
		u.b.used -= u.n - n
		u.n = n
	}
}

// release gives the reservation back (once; later calls do nothing).
func (u *uploadHold) release() {
	u.once.Do(func() {
		u.b.mu.Lock()
		defer u.b.mu.Unlock()
		u.b.used -= u.n
		d := time.Since(u.start).Seconds()
		if u.b.meanS == 0 {
			u.b.meanS = d
		} else {
			u.b.meanS = 0.8*u.b.meanS + 0.2*d
		}
	})
}

// held is the bytes reserved now.
func (b *uploadBudget) held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
