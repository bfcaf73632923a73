package main

import (
	"os"

	"github.com/headroom-sim/headroom/internal/study/calibrate"
	"github.com/headroom-sim/headroom/sim/steptime"
)

// loadProfileFile reads a calibration file (or a bare step-time profile).
func loadProfileFile(path string) (*steptime.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := calibrate.Read(f, path)
	if err != nil {
		return nil, err
	}
	return &c.Profile, nil
}
