package api

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// calibrationStore keeps the calibrations made with POST /v1/calibrations:
// in a bbolt file when a path is configured (opened, or created, at start:
// the file's lock is held for the server's life, so a second server on the
// same file fails at start instead of losing its first calibration), in
// memory otherwise. Calibrations are never changed once stored: only
// created and deleted.
type calibrationStore struct {
	path string
	mu   sync.RWMutex
	db   *bolt.DB               // nil with no path, and once closed
	mem  map[string]storedCalib // with no path
	// closed refuses every operation after close.
	closed bool
	// max is the most calibrations kept (calibrations.max_stored).
	max int
}

// storedCalib is one stored calibration: the file as `headroom calibrate
// --out` writes it, and when it was made.
type storedCalib struct {
	CreatedAt time.Time       `json:"created_at"`
	File      json.RawMessage `json:"calibration"`
}

var calibBucket = []byte("calibrations")

// errStoreClosed is an operation on a closed store (the server stopped).
var errStoreClosed = fmt.Errorf("%w: the calibration store is closed", ErrShuttingDown)

// boltTimeout is how long opening the file waits for another process's
// lock.
const boltTimeout = 2 * time.Second

// openCalibrationStore opens path, creating the file if needed ("" for
// memory only). The directory of path must exist; a file another process
// holds is an error after boltTimeout.
func openCalibrationStore(path string, maxStored int) (*calibrationStore, error) {
	s := &calibrationStore{path: path, max: maxStored}
	if path == "" {
		s.mem = map[string]storedCalib{}
		return s, nil
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, &ConfigError{Key: "calibration_store", Reason: fmt.Sprintf("calibration_store: the directory of %s does not exist (%s)", path, EnvName("calibration_store"))}
	}
	switch st, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		// created now
	case err != nil:
		return nil, fmt.Errorf("calibration store: %w", err)
	case st.IsDir():
		return nil, &ConfigError{Key: "calibration_store", Reason: fmt.Sprintf("calibration_store: %s is a directory, not a file (%s)", path, EnvName("calibration_store"))}
	}
	if err := s.openLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

// openLocked opens (or creates) the file.
func (s *calibrationStore) openLocked() error {
	db, err := openBolt(s.path, &bolt.Options{Timeout: boltTimeout})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return fmt.Errorf("calibration store %s: locked by another process (another headroom-server?): %w", s.path, err)
		}
		if errors.Is(err, errDamagedStore) {
			return &ConfigError{Key: "calibration_store", Err: err, Reason: fmt.Sprintf("calibration_store %s: %v; move it aside to start with an empty store (%s)", s.path, err, EnvName("calibration_store"))}
		}
		return fmt.Errorf("calibration store %s: %w", s.path, err)
	}
	s.db = db
	return nil
}

// persistent reports whether calibrations survive a restart.
func (s *calibrationStore) persistent() bool { return s.path != "" }

// close closes the file; later operations fail.
func (s *calibrationStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// newCalibrationID is 20 lower-case base32 characters (100 random bits).
func newCalibrationID() string { return strings.ToLower(rand.Text()[:20]) }

// create stores f under a new id, which it sets in f.
func (s *calibrationStore) create(f *calibrate.File, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStoreClosed
	}
	f.ID = newCalibrationID()
	var b bytes.Buffer
	if err := f.Write(&b); err != nil {
		return fmt.Errorf("calibration store: %w", err)
	}
	rec := storedCalib{CreatedAt: now.UTC(), File: json.RawMessage(bytes.TrimSpace(b.Bytes()))}
	full := func(n int) error {
		if s.max > 0 && n >= s.max {
			return fmt.Errorf("%w: the store holds %d calibrations, the most calibrations.max_stored allows: DELETE /v1/calibrations/{id} one first", ErrLimit, n)
		}
		return nil
	}
	if s.mem != nil {
		if err := full(len(s.mem)); err != nil {
			return err
		}
		s.mem[f.ID] = rec
		return nil
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("calibration store: %w", err)
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(calibBucket)
		if err := full(b.Stats().KeyN); err != nil {
			return err
		}
		return b.Put([]byte(f.ID), raw)
	})
}

// record reads one stored calibration.
func (s *calibrationStore) record(id string) (storedCalib, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return storedCalib{}, errStoreClosed
	}
	var rec storedCalib
	found := false
	switch {
	case s.mem != nil:
		rec, found = s.mem[id]
	case s.db != nil:
		err := s.db.View(func(tx *bolt.Tx) error {
			v := tx.Bucket(calibBucket).Get([]byte(id))
			if v == nil {
				return nil
			}
			found = true
			return json.Unmarshal(v, &rec)
		})
		if err != nil {
			return rec, fmt.Errorf("calibration store: %s: %w", id, err)
		}
	}
	if !found {
		return rec, notFound("calibration %q (GET /v1/calibrations lists them)", id)
	}
	return rec, nil
}

// get returns a stored calibration file.
func (s *calibrationStore) get(id string) (*calibrate.File, time.Time, error) {
	rec, err := s.record(id)
	if err != nil {
		return nil, time.Time{}, err
	}
	f, err := calibrate.Read(bytes.NewReader(rec.File), "calibration "+id)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("calibration store: %w", err)
	}
	f.ID = id
	return f, rec.CreatedAt, nil
}

// profile is the step-time profile of a calibration: the lookup behind a
// scenario's calibration field.
func (s *calibrationStore) profile(id string) (*steptime.Profile, error) {
	f, _, err := s.get(id)
	if err != nil {
		return nil, err
	}
	return &f.Profile, nil
}

// list summarises every calibration, oldest first.
func (s *calibrationStore) list() ([]CalibrationSummary, error) {
	s.mu.RLock()
	recs := map[string]storedCalib{}
	var err error
	switch {
	case s.closed:
		err = errStoreClosed
	case s.mem != nil:
		for id, r := range s.mem {
			recs[id] = r
		}
	case s.db != nil:
		err = s.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(calibBucket).ForEach(func(k, v []byte) error {
				var r storedCalib
				if err := json.Unmarshal(v, &r); err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
				recs[string(k)] = r
				return nil
			})
		})
	}
	s.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("calibration store: %w", err)
	}
	out := make([]CalibrationSummary, 0, len(recs))
	for id, r := range recs {
		f, err := calibrate.Read(bytes.NewReader(r.File), "calibration "+id)
		if err != nil {
			return nil, fmt.Errorf("calibration store: %w", err)
		}
		out = append(out, summarise(id, r.CreatedAt, f))
	}
	slices.SortFunc(out, func(a, b CalibrationSummary) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// remove deletes a calibration.
func (s *calibrationStore) remove(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStoreClosed
	}
	gone := notFound("calibration %q", id)
	switch {
	case s.mem != nil:
		if _, ok := s.mem[id]; !ok {
			return gone
		}
		delete(s.mem, id)
		return nil
	case s.db != nil:
		return s.db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(calibBucket)
			if b.Get([]byte(id)) == nil {
				return gone
			}
			return b.Delete([]byte(id))
		})
	}
	return gone
}

// summarise is a calibration's line in GET /v1/calibrations.
func summarise(id string, created time.Time, f *calibrate.File) CalibrationSummary {
	c := CalibrationSummary{ID: id, Model: f.Model, GPU: f.GPU, TP: f.TP, CreatedAt: created,
		SourceFile: f.Source.File, Format: f.Source.Format, Requests: f.Source.Requests}
	if f.Fit != nil {
		loss := f.Fit.After.Loss
		c.FitLoss = &loss
		c.MedianAPEPct = f.Fit.After.MedianAPE
	}
	return c
}
