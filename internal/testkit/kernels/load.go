package kernels

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Paths of the data sets, relative to the shared data directory.
const (
	VidurDir      = "profiling/vidur"
	AttentionFile = "profiling/vidur/a100-attention-tp2/attention.csv"
	SplitwiseFile = "measured/splitwise-perf-model/perf_model.csv"
)

// MLPFile is one model's mlp.csv on one GPU.
type MLPFile struct {
	GPU   string // catalog GPU id (a100-80gb, h100-sxm)
	Model string // Hugging Face id from the path (meta-llama/Llama-2-7b-hf)
	Rows  []MLPRow
}

// AttentionSet is one attention.csv.
type AttentionSet struct {
	Name string
	GPU  string
	Rows []AttentionRow
}

// NetworkSet is one node type's all_reduce.csv.
type NetworkSet struct {
	Name string // a100_dgx, h100_pairwise_nvlink …
	GPU  string
	// DGX says the node joins all its GPUs with NVSwitch (what the catalog's
	// SXM parts describe); pairwise-NVLink nodes join only pairs.
	DGX  bool
	Rows []CollectiveRow
}

// Data is every data set Load found.
type Data struct {
	MLP       []MLPFile
	Attention []AttentionSet
	Network   []NetworkSet
	Splitwise []SplitwiseRow
}

// vidurGPU maps Vidur's device folder names to catalog GPU ids. Vidur
// profiled A100 80GB SXM (DGX A100) and H100 SXM (DGX H100) nodes.
var vidurGPU = map[string]string{"a100": "a100-80gb", "h100": "h100-sxm"}

// SplitwiseGPU maps Splitwise's hardware names to catalog GPU ids. The
// "-pcap" rows are the same H100 with a power cap, which the step-time
// model does not describe.
var SplitwiseGPU = map[string]string{"a100-80gb": "a100-80gb", "h100-80gb": "h100-sxm", "h100-80gb-pcap": "h100-sxm"}

// Load reads every data set present under fsys (the shared data
// directory). Missing sets are left empty; malformed files are errors.
func Load(fsys fs.FS) (*Data, error) {
	d := &Data{}
	files, err := fs.Glob(fsys, VidurDir+"/*/*/*/mlp.csv")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		parts := strings.Split(strings.TrimPrefix(f, VidurDir+"/"), "/")
		gpu, ok := vidurGPU[parts[0]]
		if !ok {
			continue
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		rows, err := ReadMLP(f, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		d.MLP = append(d.MLP, MLPFile{GPU: gpu, Model: parts[1] + "/" + parts[2], Rows: rows})
	}
	if b, err := fs.ReadFile(fsys, AttentionFile); err == nil {
		rows, err := ReadAttention(AttentionFile, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		d.Attention = append(d.Attention, AttentionSet{Name: "a100-attention-tp2", GPU: "a100-80gb", Rows: rows})
	}
	nets, err := fs.Glob(fsys, VidurDir+"/network/*/all_reduce.csv")
	if err != nil {
		return nil, err
	}
	sort.Strings(nets)
	for _, f := range nets {
		name := path.Base(path.Dir(f))
		var gpu string
		switch {
		case strings.HasPrefix(name, "a100"):
			gpu = "a100-80gb"
		case strings.HasPrefix(name, "h100"):
			gpu = "h100-sxm"
		default:
			continue
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		rows, err := ReadCollective(f, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		d.Network = append(d.Network, NetworkSet{Name: name, GPU: gpu, DGX: strings.HasSuffix(name, "_dgx"), Rows: rows})
	}
	if b, err := fs.ReadFile(fsys, SplitwiseFile); err == nil {
		rows, err := ReadSplitwise(SplitwiseFile, bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		d.Splitwise = rows
	}
	if len(d.MLP) == 0 && len(d.Attention) == 0 && len(d.Network) == 0 && len(d.Splitwise) == 0 {
		return nil, fmt.Errorf("no data sets found")
	}
	return d, nil
}
