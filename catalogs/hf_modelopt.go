package catalogs

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// hfQuantFile is ModelOpt's hf_quant_config.json.
type hfQuantFile struct {
	name string
	obj  qobj // the "quantization" object (or the top level when flat)
}

func readHFQuantFile(name string, r io.Reader) (*hfQuantFile, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxHFConfigBytes+1))
	if err != nil {
		return nil, &FileError{File: name, Err: err}
	}
	if len(data) > maxHFConfigBytes {
		return nil, &FileError{File: name, Err: fmt.Errorf("larger than %d bytes", maxHFConfigBytes)}
	}
	x, err := decodeJSONValue(data)
	top, isObj := x.(map[string]any)
	if err != nil || !isObj {
		return nil, &FileError{File: name, Err: errors.New("not a JSON object")}
	}
	o := qobj{file: name, m: top}
	if q, ok, err := o.obj("quantization"); err != nil {
		return nil, err
	} else if ok {
		for k := range top {
			if k != "quantization" && k != "producer" {
				return nil, o.errf(k, "unknown hf_quant_config.json key (want producer and quantization)")
			}
		}
		o = q
	}
	return &hfQuantFile{name: name, obj: o}, nil
}

// modelOptAlgos maps ModelOpt's quant_algo to a scheme, its group size and
// activation scheme.
var modelOptAlgos = map[string]struct {
	scheme    models.QuantScheme
	group     int
	block     []int
	actScheme string
}{
	"FP8":                       {models.SchemeFP8PerTensor, 0, nil, "static"},
	"FP8_PER_CHANNEL_PER_TOKEN": {models.SchemeFP8PerChannel, 0, nil, "dynamic"},
	"FP8_BLOCK_SCALES":          {models.SchemeFP8Block, 0, []int{128, 128}, "dynamic"},
	"NVFP4":                     {models.SchemeNVFP4, 16, nil, "static"},
	"W4A16_AWQ":                 {models.SchemeINT4WeightOnly, 128, nil, ""},
	"W4A8_AWQ":                  {models.SchemeINT4W4A8FP8, 128, nil, "static"},
	"W8A8_SQ_PER_CHANNEL":       {models.SchemeINT8W8A8, 0, nil, ""},
	"W4A16_MXFP4":               {models.SchemeMXFP4, 32, nil, ""},
}

func modelOptAlgoList() string {
	names := make([]string, 0, len(modelOptAlgos))
	for k := range modelOptAlgos {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// modelOptFields are the settings one ModelOpt source states.
type modelOptFields struct {
	algo, algoField string
	kv              hardware.DType
	kvSet           bool
	kvField         string
	group           int
	groupSet        bool
	groupField      string
}

func readModelOptFields(o qobj, lenient bool, ignored *[]string) (modelOptFields, *quantSpec, error) {
	var f modelOptFields
	spec := &quantSpec{method: "modelopt"}
	if err := o.checkKeys(quantKeysModelOpt, lenient, ignored); err != nil {
		return f, nil, err
	}
	if nested, ok, err := o.obj("quantization"); err != nil {
		return f, nil, err
	} else if ok {
		nf, nspec, err := readModelOptFields(nested, lenient, ignored)
		if err != nil {
			return f, nil, err
		}
		f, spec.excluded = nf, nspec.excluded
	}
	if a, ok, err := o.str("quant_algo"); err != nil {
		return f, nil, err
	} else if ok {
		f.algo, f.algoField = strings.ToUpper(a), o.path("quant_algo")
	}
	if v, present := o.m["kv_cache_quant_algo"]; present {
		f.kvSet, f.kvField = true, o.path("kv_cache_quant_algo")
		if v != nil {
			s, isStr := v.(string)
			if !isStr {
				return f, nil, o.errf("kv_cache_quant_algo", "must be a string, not %s", jsonKind(v))
			}
			switch strings.ToUpper(s) {
			case "FP8":
				f.kv = hardware.FP8
			case "INT8":
				f.kv = hardware.INT8
			default:
				return f, nil, o.errf("kv_cache_quant_algo", "%q is not supported (want FP8, INT8 or null)", s)
			}
		}
	}
	if g, ok, err := o.int("group_size"); err != nil {
		return f, nil, err
	} else if ok {
		f.group, f.groupSet, f.groupField = g, true, o.path("group_size")
	}
	if err := spec.readExcluded(o, "exclude_modules"); err != nil {
		return f, nil, err
	}
	if err := spec.readCompressedTensors(o, lenient, ignored, false); err != nil {
		return f, nil, err
	}
	return f, spec, nil
}

// parseModelOpt combines config.json's quantization_config (q, nil when
// absent) with hf_quant_config.json (qf, nil when not given). Settings both
// state must agree; the module lists are joined.
func parseModelOpt(q *qobj, qf *hfQuantFile, lenient bool, ignored *[]string) (*quantSpec, error) {
	type source struct {
		f    modelOptFields
		spec *quantSpec
	}
	var srcs []source
	for _, o := range []*qobj{q, fileObj(qf)} {
		if o == nil {
			continue
		}
		f, spec, err := readModelOptFields(*o, lenient, ignored)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, source{f, spec})
	}
	out := &quantSpec{method: "modelopt"}
	var algo modelOptFields
	for i, s := range srcs {
		switch {
		case s.f.algo == "":
		case algo.algo == "":
			algo.algo, algo.algoField = s.f.algo, s.f.algoField
		case s.f.algo != algo.algo:
			return nil, &FileError{File: fileOf(q, qf, i), Field: s.f.algoField, Err: fmt.Errorf("%s disagrees with %s %s", s.f.algo, algo.algoField, algo.algo)}
		}
		if s.f.kvSet {
			if algo.kvSet && s.f.kv != algo.kv {
				return nil, &FileError{File: fileOf(q, qf, i), Field: s.f.kvField, Err: fmt.Errorf("%q disagrees with %s %q", s.f.kv, algo.kvField, algo.kv)}
			}
			algo.kv, algo.kvSet, algo.kvField = s.f.kv, true, s.f.kvField
		}
		if s.spec.kv != "" {
			if algo.kvSet && s.spec.kv != algo.kv {
				return nil, &FileError{File: fileOf(q, qf, i), Field: "kv_cache_scheme", Err: fmt.Errorf("%s disagrees with %s %q", s.spec.kv, algo.kvField, algo.kv)}
			}
			algo.kv, algo.kvSet = s.spec.kv, true
			if algo.kvField == "" {
				algo.kvField = "kv_cache_scheme"
			}
		}
		if s.f.groupSet && !algo.groupSet {
			algo.group, algo.groupSet, algo.groupField = s.f.group, true, s.f.groupField
		}
		out.excluded = append(out.excluded, s.spec.excluded...)
	}
	if algo.algo == "" {
		file := fileOf(q, qf, 0)
		field := "quant_algo"
		if q != nil {
			field = q.path("quant_algo")
		}
		return nil, &FileError{File: file, Field: field, Err: errors.New("is required for a ModelOpt checkpoint (in config.json or hf_quant_config.json)")}
	}
	a, known := modelOptAlgos[algo.algo]
	if !known {
		return nil, &FileError{File: fileOf(q, qf, 0), Field: algo.algoField, Err: fmt.Errorf("unsupported quant_algo %q (want one of %s)", algo.algo, modelOptAlgoList())}
	}
	out.scheme, out.group, out.block, out.actScheme, out.kv = a.scheme, a.group, a.block, a.actScheme, algo.kv
	if algo.groupSet && algo.group != a.group {
		// Only the int4 AWQ formats choose their group size.
		free := a.scheme == models.SchemeINT4WeightOnly || a.scheme == models.SchemeINT4W4A8FP8
		if !free || algo.group <= 0 {
			return nil, &FileError{File: fileOf(q, qf, 0), Field: algo.groupField, Err: fmt.Errorf("%d does not fit quant_algo %s (groups of %d)", algo.group, algo.algo, a.group)}
		}
		out.group = algo.group
	}
	// Compressed-tensors style groups of the same export must say the same.
	for _, s := range srcs {
		if cs := s.spec.scheme; cs != "" && cs != out.scheme {
			return nil, &FileError{File: s.spec.groupsFile, Field: s.spec.groupsField, Err: fmt.Errorf("describe scheme %s, but quant_algo %s is %s", cs, algo.algo, out.scheme)}
		}
		if s.spec.scheme != "" && s.spec.actScheme != "" {
			out.actScheme = s.spec.actScheme
		}
		out.expertsOnly = out.expertsOnly || s.spec.expertsOnly
	}
	return out, nil
}

func fileObj(qf *hfQuantFile) *qobj {
	if qf == nil {
		return nil
	}
	return &qf.obj
}

// fileOf names the file of source i of parseModelOpt.
func fileOf(q *qobj, qf *hfQuantFile, i int) string {
	if q != nil && i == 0 {
		return q.file
	}
	if qf != nil {
		return qf.name
	}
	return q.file
}
