package replay

import (
	"fmt"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
)

// Inspection is what `headroom inspect --output json` prints and POST
// /v1/inspect answers: the run as read (measured.Describe) and what the
// catalog makes of its names.
type Inspection struct {
	File              string `json:"file"`
	FormatDescription string `json:"format_description,omitempty"`
	measured.Description
	// CatalogModel and CatalogGPU are the catalog ids the recorded names
	// resolve to ("" when they do not; a hint says what to give).
	CatalogModel string   `json:"catalog_model"`
	CatalogGPU   string   `json:"catalog_gpu"`
	Hints        []string `json:"hints,omitempty"`
}

// Inspect describes run, read from file, against cat. give names the
// input that supplies a missing name, for the hints: give("model") is
// "--model" on the command line, "the model field" in a form.
func Inspect(run *measured.Run, cat *catalogs.Catalog, file string, give func(name string) string) Inspection {
	in := Inspection{File: file, FormatDescription: measured.DescribeFormat(run.Format), Description: measured.Describe(run)}
	if id, err := ResolveModel(cat, run.Model); err == nil {
		in.CatalogModel = id
	} else if run.Model == "" {
		in.Hints = append(in.Hints, fmt.Sprintf("the run does not name its model: give %s to validate or calibrate", give("model")))
	} else {
		in.Hints = append(in.Hints, fmt.Sprintf("model %q names no catalog model: give %s to validate or calibrate", run.Model, give("model")))
	}
	if g, err := cat.GPU(run.GPU); err == nil {
		in.CatalogGPU = g.ID
	} else if run.GPU == "" {
		in.Hints = append(in.Hints, fmt.Sprintf("the run does not name its GPU: give %s to validate or calibrate", give("gpu")))
	} else {
		in.Hints = append(in.Hints, fmt.Sprintf("GPU %q is not in the catalog: give %s to validate or calibrate", run.GPU, give("gpu")))
	}
	return in
}
