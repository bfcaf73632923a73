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

// readHFQuantFile reads hf_quant_config.json: {"producer": …,
// "quantization": {…}}, or the settings at the top level. Other top-level
// keys are errors unless lenient.
func readHFQuantFile(name string, r io.Reader, lenient bool) (*hfQuantFile, error) {
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
			if k != "quantization" && k != "producer" && !lenient {
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

// stated is one setting of a ModelOpt source and where it was read.
type stated[T comparable] struct {
	v           T
	set         bool
	file, field string
}

// merge takes other's value when s has none; two values must agree.
func (s *stated[T]) merge(other stated[T]) error {
	switch {
	case !other.set:
	case !s.set:
		*s = other
	case other.v != s.v:
		return &FileError{File: other.file, Field: other.field, Err: fmt.Errorf("%v disagrees with %s %v (%s)", other.v, s.field, s.v, s.file)}
	}
	return nil
}

// modelOptFields are the settings one ModelOpt source states.
type modelOptFields struct {
	algo  stated[string]
	kv    stated[hardware.DType] // kv_cache_quant_algo or kv_cache_scheme; null is not stated
	group stated[int]
}

func readModelOptFields(o qobj, lenient bool, ignored *[]string) (modelOptFields, *quantSpec, error) {
	var f modelOptFields
	spec := &quantSpec{method: "modelopt"}
	if err := o.checkKeys(quantKeysModelOpt, lenient, ignored); err != nil {
		return f, nil, err
	}
	at := func(k string) (string, string) { return o.file, o.path(k) }
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
		file, field := at("quant_algo")
		if err := f.algo.merge(stated[string]{strings.ToUpper(a), true, file, field}); err != nil {
			return f, nil, err
		}
	}
	if k, ok, err := o.str("kv_cache_quant_algo"); err != nil {
		return f, nil, err
	} else if ok {
		var dt hardware.DType
		switch strings.ToUpper(k) {
		case "FP8":
			dt = hardware.FP8
		case "INT8":
			dt = hardware.INT8
		default:
			return f, nil, o.errf("kv_cache_quant_algo", "%q is not supported (want FP8, INT8 or null)", k)
		}
		file, field := at("kv_cache_quant_algo")
		if err := f.kv.merge(stated[hardware.DType]{dt, true, file, field}); err != nil {
			return f, nil, err
		}
	}
	if g, ok, err := o.int("group_size"); err != nil {
		return f, nil, err
	} else if ok {
		file, field := at("group_size")
		if err := f.group.merge(stated[int]{g, true, file, field}); err != nil {
			return f, nil, err
		}
	}
	if err := spec.readExcluded(o, "exclude_modules"); err != nil {
		return f, nil, err
	}
	if err := spec.readCompressedTensors(o, lenient, ignored, false); err != nil {
		return f, nil, err
	}
	if spec.kv != "" {
		file, field := at("kv_cache_scheme")
		if err := f.kv.merge(stated[hardware.DType]{spec.kv, true, file, field}); err != nil {
			return f, nil, err
		}
	}
	return f, spec, nil
}

// parseModelOpt combines config.json's quantization_config (q, nil when
// absent) with hf_quant_config.json (qf, nil when not given). Settings both
// state must agree; the module lists are joined.
func parseModelOpt(q *qobj, qf *hfQuantFile, lenient bool, ignored *[]string) (*quantSpec, error) {
	var all modelOptFields
	var specs []*quantSpec
	for _, o := range []*qobj{q, fileObj(qf)} {
		if o == nil {
			continue
		}
		f, spec, err := readModelOptFields(*o, lenient, ignored)
		if err != nil {
			return nil, err
		}
		for _, err := range []error{all.algo.merge(f.algo), all.kv.merge(f.kv), all.group.merge(f.group)} {
			if err != nil {
				return nil, err
			}
		}
		specs = append(specs, spec)
	}
	if !all.algo.set {
		o := q
		if o == nil {
			o = &qf.obj
		}
		return nil, o.errf("quant_algo", "is required for a ModelOpt checkpoint (in config.json or hf_quant_config.json)")
	}
	a, known := modelOptAlgos[all.algo.v]
	if !known {
		return nil, &FileError{File: all.algo.file, Field: all.algo.field, Err: fmt.Errorf("unsupported quant_algo %q (want one of %s)", all.algo.v, modelOptAlgoList())}
	}
	out := &quantSpec{method: "modelopt", scheme: a.scheme, group: a.group, block: a.block, actScheme: a.actScheme, kv: all.kv.v}
	if g := all.group; g.set && g.v != a.group {
		// Only the int4 AWQ formats choose their group size.
		free := a.scheme == models.SchemeINT4WeightOnly || a.scheme == models.SchemeINT4W4A8FP8
		if !free || g.v <= 0 {
			return nil, &FileError{File: g.file, Field: g.field, Err: fmt.Errorf("%d does not fit quant_algo %s (groups of %d)", g.v, all.algo.v, a.group)}
		}
		out.group = g.v
	}
	for _, s := range specs {
		out.excluded = append(out.excluded, s.excluded...)
		// Compressed-tensors style groups of the same export must agree.
		if s.scheme != "" && s.scheme != out.scheme {
			return nil, &FileError{File: s.groupsFile, Field: s.groupsField, Err: fmt.Errorf("describe scheme %s, but quant_algo %s is %s", s.scheme, all.algo.v, out.scheme)}
		}
		if s.scheme != "" && s.actScheme != "" {
			out.actScheme = s.actScheme
		}
		out.expertsOnly = out.expertsOnly || s.expertsOnly
	}
	return out, nil
}

func fileObj(qf *hfQuantFile) *qobj {
	if qf == nil {
		return nil
	}
	return &qf.obj
}
