package api

import (
	"path/filepath"
	"strings"
)

// calibrationStoreFile is the calibration store's file name in the state
// directory.
const calibrationStoreFile = "calibrations.db"

// StateDir is Headroom's directory in the user's state directory, as the
// XDG Base Directory specification places it: $XDG_STATE_HOME/headroom when
// XDG_STATE_HOME is an absolute path (a relative one is ignored, as the
// specification says), else $HOME/.local/state/headroom; "" when neither
// is set. environ is the process environment as "NAME=value" entries.
func StateDir(environ []string) string {
	get := func(name string) string {
		v := ""
		for _, kv := range environ {
			if n, val, ok := strings.Cut(kv, "="); ok && n == name {
				v = val // the last one wins, as in os.Getenv
			}
		}
		return v
	}
	if x := get("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "headroom")
	}
	if h := get("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "headroom")
	}
	return ""
}

// DefaultCalibrationStore is the calibration store a configuration that
// does not set calibration_store gets: calibrations.db in StateDir ("" when
// there is no state directory).
func DefaultCalibrationStore(environ []string) string {
	dir := StateDir(environ)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, calibrationStoreFile)
}
