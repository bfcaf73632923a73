package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// FileSchemaVersion is the version of the calibration file format.
const FileSchemaVersion = 1

// FileKind marks a calibration file.
const FileKind = "headroom.calibration"

// File is a calibration profile as `headroom calibrate` writes it and
// `--calibration FILE` (or a scenario's calibration field) reads it.
type File struct {
	SchemaVersion int    `json:"schema_version"`
	Kind          string `json:"kind"`
	// ID is set by the API's store.
	ID            string           `json:"id,omitempty"`
	GPU           string           `json:"gpu"`
	Model         string           `json:"model"`
	TP            int              `json:"tp"`
	EngineVersion string           `json:"engine_version,omitempty"`
	Source        Source           `json:"source"`
	Profile       steptime.Profile `json:"profile"`
	Fit           *FitSummary      `json:"fit,omitempty"`
}

// Source identifies the run a profile was fitted on.
type Source struct {
	File     string `json:"file"`
	Format   string `json:"format"`
	SHA256   string `json:"sha256"`
	Run      string `json:"run"`
	Requests int    `json:"requests"`
}

// FitSummary records how the fit went.
type FitSummary struct {
	Fitted      []string   `json:"fitted"`
	Evaluations int        `json:"evaluations"`
	Before      Evaluation `json:"before"`
	After       Evaluation `json:"after"`
}

// ErrNotCalibration is returned for JSON that is not a calibration file.
var ErrNotCalibration = errors.New("not a headroom calibration file")

// Read parses a calibration file (a bare step-time profile is accepted too)
// and validates its profile.
func Read(r io.Reader, name string) (*File, error) {
	b, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var f File
	dec := json.Unmarshal(b, &f)
	if dec != nil || f.Kind != FileKind {
		var p steptime.Profile
		if err := json.Unmarshal(b, &p); err != nil || p.SchemaVersion == 0 {
			return nil, fmt.Errorf("%s: %w", name, ErrNotCalibration)
		}
		f = File{SchemaVersion: FileSchemaVersion, Kind: FileKind, Profile: p}
	}
	if f.SchemaVersion > FileSchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d is newer than this build understands (%d)", name, f.SchemaVersion, FileSchemaVersion)
	}
	if err := f.Profile.Validate(); err != nil {
		return nil, fmt.Errorf("%s: profile: %w", name, err)
	}
	return &f, nil
}

// Write encodes f as indented JSON.
func (f *File) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}
