package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

	"github.com/headroom-sim/headroom/catalogs"
)

const catalogUsage = "usage: headroom catalog list gpus|models | show gpus|models ID | import-hf CONFIG.json --id ID [--out DIR]"

func runCatalog(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("catalog")
	format := fs.String("output", "table", "output format: table|json (list, show)")
	dir := fs.String("catalog-dir", "", "directory of extra catalog entries")
	id := fs.String("id", "", "import-hf: id of the new model")
	out := fs.String("out", "", "import-hf: catalog directory to write models/ID.yaml into (default: print the YAML)")
	lenient := fs.Bool("ignore-unknown", false, "import-hf: ignore config.json keys Headroom does not know")
	pos, err := parseFlags(fs, args, e.stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("%s", catalogUsage)
	}
	if err := outputFormat(*format); err != nil {
		return err
	}
	if pos[0] == "import-hf" {
		if len(pos) != 2 {
			return usagef("import-hf: want exactly one config.json path")
		}
		return importHF(e, pos[1], *id, *out, *lenient)
	}
	cat, err := loadCatalog(e, *dir)
	if err != nil {
		return err
	}
	switch {
	case pos[0] == "list" && len(pos) == 2:
		return listCatalog(e, cat, pos[1], *format)
	case pos[0] == "show" && len(pos) == 3:
		return showCatalog(e, cat, pos[1], pos[2], *format)
	}
	return usagef("%s", catalogUsage)
}

func listCatalog(e *env, cat *catalogs.Catalog, kind, format string) error {
	switch kind {
	case "gpus", "gpu":
		gs := cat.GPUs()
		if format == "json" {
			return writeJSON(e.stdout, gs)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tMEMORY_GIB\tHBM_GBPS\tBF16_TFLOPS\tFP8_TFLOPS\tSCALE_UP\tUSD_PER_HOUR")
		for _, g := range gs {
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.0f\t%.0f\t%.0f\t%s %.0f GB/s\t%.2f\n", g.ID, g.Name, g.MemoryGiB(), g.HBMBandwidthGBps,
				g.DenseTFLOPS.BF16, g.DenseTFLOPS.FP8, g.ScaleUp.Kind, g.ScaleUp.BandwidthGBps, g.PricePerGPUHourUSD)
		}
		return tw.Flush()
	case "models", "model":
		ms := cat.Models()
		if format == "json" {
			return writeJSON(e.stdout, ms)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tHF_ID\tPARAMS_B\tACTIVE_B\tLAYERS\tHIDDEN\tHEADS/KV\tKV_BYTES_PER_TOKEN\tMAX_POS")
		for _, m := range ms {
			p := m.Params()
			fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%d\t%d\t%d/%d\t%.0f\t%d\n", m.ID, m.HFID, float64(p.Total)/1e9, float64(p.Active)/1e9,
				m.NumLayers, m.HiddenSize, m.NumHeads, m.NumKVHeads, m.KVBytesPerToken(m.DefaultPrecision().KV, 1), m.MaxPositions)
		}
		return tw.Flush()
	}
	return usagef("catalog list: %q is not gpus or models", kind)
}

func showCatalog(e *env, cat *catalogs.Catalog, kind, id, format string) error {
	var v any
	switch kind {
	case "gpus", "gpu":
		g, err := cat.GPU(id)
		if err != nil {
			return usagef("catalog show gpus: %v", err)
		}
		v = g
	case "models", "model":
		m, err := cat.Model(id)
		if err != nil {
			return usagef("catalog show models: %v", err)
		}
		if format == "json" {
			return writeJSON(e.stdout, struct {
				Model  any `json:"model"`
				Params any `json:"params"`
			}{m, m.Params()})
		}
		v = m
	default:
		return usagef("catalog show: %q is not gpus or models", kind)
	}
	if format == "json" {
		return writeJSON(e.stdout, v)
	}
	enc := yaml.NewEncoder(e.stdout)
	enc.SetIndent(2)
	return enc.Encode(v)
}

func importHF(e *env, path, id, outDir string, lenient bool) error {
	if id == "" {
		return usagef("import-hf: --id is required")
	}
	f, err := os.Open(path)
	if err != nil {
		return usagef("import-hf: %v", err)
	}
	defer f.Close()
	importer := catalogs.ImportHF
	if lenient {
		importer = catalogs.ImportHFLenient
	}
	m, ignored, err := importer(filepath.Base(path), f, id)
	if err != nil {
		return usagef("import-hf: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by `headroom catalog import-hf` from %s.\n", filepath.Base(path))
	if len(ignored) > 0 {
		fmt.Fprintf(&b, "# Ignored config.json keys: %s\n", strings.Join(ignored, ", "))
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return err
	}
	if outDir == "" {
		_, err := fmt.Fprint(e.stdout, b.String())
		return err
	}
	dst := filepath.Join(outDir, "models", id+".yaml")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s (use --catalog-dir %s)\n", dst, outDir)
	return nil
}
