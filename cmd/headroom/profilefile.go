package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// loadProfileFile reads a step-time profile: either a bare Profile or a
// calibration file with the profile under "profile".
func loadProfileFile(path string) (*steptime.Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var wrapped struct {
		Profile *steptime.Profile `json:"profile"`
	}
	if err := json.Unmarshal(b, &wrapped); err == nil && wrapped.Profile != nil {
		return wrapped.Profile, nil
	}
	var p steptime.Profile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &p, nil
}
