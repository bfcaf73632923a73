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

const catalogUsage = "usage: headroom catalog list gpus|models|interconnects | show gpus|models|interconnects ID | import-hf CONFIG.json --id ID [--hf-id ORG/NAME] [--quant-config hf_quant_config.json] [--out DIR]"

func runCatalog(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("catalog")
	format := fs.String("output", "table", "output format: table|json (list, show)")
	dir := fs.String("catalog-dir", "", "directory of extra catalog entries")
	var imp hfImport
	fs.StringVar(&imp.id, "id", "", "import-hf: id of the new model (a Hugging Face id such as ORG/NAME works)")
	fs.StringVar(&imp.hfID, "hf-id", "", "import-hf: Hugging Face id of the model (default: --id when it has the ORG/NAME form)")
	fs.StringVar(&imp.quantConfig, "quant-config", "", "import-hf: NVIDIA ModelOpt hf_quant_config.json of the checkpoint (default: the one beside CONFIG.json, if any)")
	fs.StringVar(&imp.outDir, "out", "", "import-hf: catalog directory to write models/ID.yaml into (default: print the YAML)")
	fs.BoolVar(&imp.lenient, "ignore-unknown", false, "import-hf: ignore config.json keys Headroom does not know")
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
		imp.config = pos[1]
		return importHF(e, imp)
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
	case "interconnects", "interconnect", "links":
		return listInterconnects(e, format)
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
	return usagef("catalog list: %q is not gpus, models or interconnects", kind)
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
	case "interconnects", "interconnect", "links":
		l, err := interconnect(id)
		if err != nil {
			return err
		}
		v = l
	default:
		return usagef("catalog show: %q is not gpus, models or interconnects", kind)
	}
	if format == "json" {
		return writeJSON(e.stdout, v)
	}
	enc := yaml.NewEncoder(e.stdout)
	enc.SetIndent(2)
	return enc.Encode(v)
}

// hfImport is what catalog import-hf was asked to do.
type hfImport struct {
	config, id, hfID, quantConfig, outDir string
	lenient                               bool
}

// besideQuantConfig is ModelOpt's hf_quant_config.json next to a config
// file: config.json → hf_quant_config.json, X_config.json →
// X_hf_quant_config.json (as copies of several repositories are named).
func besideQuantConfig(config string) string {
	dir, base := filepath.Split(config)
	prefix, ok := strings.CutSuffix(base, "config.json")
	if !ok {
		return ""
	}
	p := filepath.Join(dir, prefix+"hf_quant_config.json")
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
}

func importHF(e *env, imp hfImport) error {
	if imp.id == "" {
		return usagef("import-hf: --id is required")
	}
	if imp.hfID == "" && strings.Count(imp.id, "/") == 1 {
		imp.hfID = imp.id
	}
	var dst string
	if imp.outDir != "" {
		rel, err := catalogs.ModelFile(imp.id)
		if err != nil {
			return usagef("import-hf: --id: %v", err)
		}
		dst = filepath.Join(imp.outDir, filepath.FromSlash(rel))
	}
	f, err := os.Open(imp.config)
	if err != nil {
		return usagef("import-hf: %v", err)
	}
	defer f.Close()
	opts := catalogs.HFOptions{ID: imp.id, Lenient: imp.lenient}
	quant := imp.quantConfig
	if quant == "" {
		quant = besideQuantConfig(imp.config)
	}
	if quant != "" {
		qf, err := os.Open(quant)
		if err != nil {
			return usagef("import-hf: --quant-config: %v", err)
		}
		defer qf.Close()
		opts.QuantConfig, opts.QuantConfigName = qf, filepath.Base(quant)
	}
	m, ignored, err := catalogs.ImportHFWith(filepath.Base(imp.config), f, opts)
	if err != nil {
		return usagef("import-hf: %v", err)
	}
	m.HFID = imp.hfID
	var b strings.Builder
	fmt.Fprintf(&b, "# Imported by `headroom catalog import-hf` from %s", filepath.Base(imp.config))
	if quant != "" {
		fmt.Fprintf(&b, " and %s", filepath.Base(quant))
	}
	b.WriteString(".\n")
	if len(ignored) > 0 {
		fmt.Fprintf(&b, "# Ignored config.json keys: %s\n", strings.Join(ignored, ", "))
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return err
	}
	// What is written must load back as the same entry.
	if err := catalogs.New().LoadModels(filepath.Base(imp.config), strings.NewReader(b.String())); err != nil {
		return fmt.Errorf("import-hf: the imported entry does not load back: %w", err)
	}
	if imp.outDir == "" {
		_, err := fmt.Fprint(e.stdout, b.String())
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, []byte(b.String()), 0o644); err != nil {
		return err
	}
	// The directory as --catalog-dir reads it must now answer to the id
	// and the Hugging Face id.
	cat, err := loadCatalog(e, imp.outDir)
	if err != nil {
		return fmt.Errorf("import-hf: wrote %s, but %w", dst, err)
	}
	for _, name := range []string{imp.id, imp.hfID} {
		if name == "" {
			continue
		}
		if got, err := cat.Model(name); err != nil || got.ID != m.ID {
			return fmt.Errorf("import-hf: wrote %s, but --catalog-dir %s does not resolve %q to it", dst, imp.outDir, name)
		}
	}
	fmt.Fprintf(e.stdout, "wrote %s (use --catalog-dir %s)\n", dst, imp.outDir)
	return nil
}
