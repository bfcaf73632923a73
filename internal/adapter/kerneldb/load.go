package kerneldb

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/headroom-sim/headroom/sim/steptime"
)

// ErrNoSystem is returned when the database has no tables for a system.
var ErrNoSystem = errors.New("no kernel tables for this system")

// MaxFileBytes bounds one table file (the largest shipped table is under
// 1 MiB; a user's database may be larger, but not without limit).
const MaxFileBytes = 256 << 20

// The table files, by op directory.
var tableFiles = map[string][]string{
	"gemm":      {"gemm_perf.parquet"},
	"attention": {"context_attention_perf.parquet", "generation_attention_perf.parquet"},
	"moe":       {"moe_perf.parquet"},
	"comm":      {"custom_allreduce_perf.parquet", "nccl_perf.parquet"},
	"mla":       {"mla_context_module_perf.parquet", "mla_generation_module_perf.parquet"},
}

// Systems lists the systems (top-level directories holding at least one
// op directory) in fsys.
func Systems(fsys fs.FS) ([]string, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		for op := range tableFiles {
			if st, err := fs.Stat(fsys, path.Join(e.Name(), op)); err == nil && st.IsDir() {
				out = append(out, e.Name())
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Options choose among the versions a database holds.
type Options struct {
	// Framework is the serving framework's directory (default "vllm").
	Framework string
	// Version is the framework version ("" = the newest present).
	Version string
	// NCCLVersion is the NCCL directory ("" = the system file's
	// misc.nccl_version, else the newest present).
	NCCLVersion string
}

// Load reads one system's tables from fsys, laid out as AIConfigurator's
// perf database: <system>/<op>/<framework>/<version>/<table>.parquet, with
// the NCCL tables under <system>/comm/nccl/<version>/. Missing op
// directories are allowed (the step-time model falls back to its formula);
// a system with none is ErrNoSystem.
func Load(fsys fs.FS, system string, opt Options) (*steptime.KernelDB, error) {
	if opt.Framework == "" {
		opt.Framework = "vllm"
	}
	if !fs.ValidPath(system) || strings.Contains(system, "/") {
		return nil, fmt.Errorf("kernel db: system %q is not a directory name", system)
	}
	db := steptime.NewKernelDB(system, "")
	var read []string
	for _, op := range []string{"gemm", "attention", "moe", "comm", "mla"} {
		dir := path.Join(system, op, opt.Framework)
		ver, err := pickVersion(fsys, dir, opt.Version)
		if err != nil {
			continue
		}
		for _, name := range tableFiles[op] {
			if name == "nccl_perf.parquet" {
				continue
			}
			p := path.Join(dir, ver, name)
			if _, err := fs.Stat(fsys, p); err != nil {
				continue
			}
			if err := loadTable(fsys, p, db); err != nil {
				return nil, fmt.Errorf("kernel db %s: %w", p, err)
			}
			read = append(read, path.Join(op, opt.Framework, ver, name))
		}
	}
	ncclDir := path.Join(system, "comm", "nccl")
	nv := opt.NCCLVersion
	if nv == "" {
		nv = systemNCCLVersion(fsys, system)
	}
	if ver, err := pickVersion(fsys, ncclDir, nv); err == nil {
		p := path.Join(ncclDir, ver, "nccl_perf.parquet")
		if _, err := fs.Stat(fsys, p); err == nil {
			if err := loadTable(fsys, p, db); err != nil {
				return nil, fmt.Errorf("kernel db %s: %w", p, err)
			}
			read = append(read, path.Join("comm", "nccl", ver, "nccl_perf.parquet"))
		}
	}
	if len(read) == 0 {
		return nil, fmt.Errorf("kernel db: %w: %s (looked for %s/<op>/%s/<version>/*.parquet)", ErrNoSystem, system, system, opt.Framework)
	}
	db.Source = system + ": " + strings.Join(read, ", ")
	return db.Finish(), nil
}

// pickVersion returns want if dir holds it, else the newest version
// directory in dir ("" want only).
func pickVersion(fsys fs.FS, dir, want string) (string, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return "", err
	}
	var vs []string
	for _, e := range ents {
		if e.IsDir() {
			vs = append(vs, e.Name())
		}
	}
	if len(vs) == 0 {
		return "", fs.ErrNotExist
	}
	if want != "" {
		for _, v := range vs {
			if v == want {
				return v, nil
			}
		}
		// A prefix names a release line ("2.27" for "2.27.3").
		for _, v := range vs {
			if strings.HasPrefix(v, want+".") {
				return v, nil
			}
		}
	}
	sort.Slice(vs, func(i, j int) bool { return versionLess(vs[i], vs[j]) })
	return vs[len(vs)-1], nil
}

// versionLess orders dotted versions numerically ("0.19.0" after "0.9.1").
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, ea := strconv.Atoi(pa[i])
		nb, eb := strconv.Atoi(pb[i])
		if ea == nil && eb == nil {
			if na != nb {
				return na < nb
			}
			continue
		}
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

// systemNCCLVersion reads misc.nccl_version from systems/<system>.yaml
// beside the system directories, if there is one. It is a two-level key in
// a small file: a line scan is enough and keeps YAML parsing out of here.
func systemNCCLVersion(fsys fs.FS, system string) string {
	b, err := fs.ReadFile(fsys, path.Join("systems", system+".yaml"))
	if err != nil || len(b) > 1<<20 {
		return ""
	}
	inMisc := false
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t") {
			inMisc = strings.HasPrefix(trimmed, "misc:")
			continue
		}
		if inMisc && strings.HasPrefix(trimmed, "nccl_version:") {
			v := strings.TrimSpace(strings.TrimPrefix(trimmed, "nccl_version:"))
			if i := strings.Index(v, "#"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
			return strings.Trim(v, `'"`)
		}
	}
	return ""
}

func readAll(fsys fs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("larger than %d MiB", MaxFileBytes>>20)
	}
	return b, nil
}

// readRows decodes a Parquet table, a batch of rows at a time: a reader
// asked for every row at once (parquet.Read) holds them all as generic
// values first, several times the table's decoded size.
func readRows[T any](b []byte) ([]T, error) {
	file, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	reader := parquet.NewGenericReader[T](file)
	defer reader.Close()
	// The row count is the file's claim: reserve for it only up to a
	// bound, and let a larger table grow as it is read.
	rows := make([]T, 0, min(file.NumRows(), maxReservedRows))
	batch := make([]T, readBatch)
	for {
		n, err := reader.Read(batch)
		rows = append(rows, batch[:n]...)
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

const (
	readBatch       = 1024    // rows readRows decodes at a time
	maxReservedRows = 1 << 20 // rows it reserves room for up front
)

// loadTable reads one Parquet table into db, by its file name.
func loadTable(fsys fs.FS, p string, db *steptime.KernelDB) error {
	b, err := readAll(fsys, p)
	if err != nil {
		return err
	}
	switch path.Base(p) {
	case "gemm_perf.parquet":
		rows, err := readRows[gemmRow](b)
		if err != nil {
			return err
		}
		return addGEMM(db, rows)
	case "context_attention_perf.parquet", "generation_attention_perf.parquet":
		rows, err := readRows[attentionRow](b)
		if err != nil {
			return err
		}
		return addAttention(db, rows, strings.HasPrefix(path.Base(p), "context"))
	case "moe_perf.parquet":
		rows, err := readRows[moeRow](b)
		if err != nil {
			return err
		}
		return addMoE(db, rows)
	case "custom_allreduce_perf.parquet":
		rows, err := readRows[allReduceRow](b)
		if err != nil {
			return err
		}
		return addAllReduce(db, rows)
	case "nccl_perf.parquet":
		rows, err := readRows[ncclRow](b)
		if err != nil {
			return err
		}
		return addNCCL(db, rows)
	case "mla_context_module_perf.parquet", "mla_generation_module_perf.parquet":
		rows, err := readRows[mlaRow](b)
		if err != nil {
			return err
		}
		return addMLA(db, rows, strings.HasPrefix(path.Base(p), "mla_context"))
	}
	return fmt.Errorf("unknown table")
}
