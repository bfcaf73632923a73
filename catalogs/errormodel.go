package catalogs

import _ "embed"

//go:embed errormodel.json
var errorModel []byte

// ErrorModel is the built-in error model of the simulator's predictions:
// the validation runs' residuals pooled by regime, fitted by
// internal/study/uncertainty (which reads it: uncertainty.Parse) and
// regenerated with `go test ./internal/study/uncertainty -run
// TestErrorModel -update`.
func ErrorModel() []byte { return errorModel }
