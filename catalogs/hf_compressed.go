package catalogs

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// ctArgs are compressed-tensors QuantizationArgs.
type ctArgs struct {
	bits     int
	typ      string // int or float
	strategy string // tensor, channel, group, block, token, tensor_group
	group    int
	block    []int
	dynamic  bool
}

func readCTArgs(o qobj, lenient bool, ignored *[]string) (ctArgs, error) {
	var a ctArgs
	if err := o.checkKeys(quantKeysCTArgs, lenient, ignored); err != nil {
		return a, err
	}
	bits, ok, err := o.int("num_bits")
	if err != nil {
		return a, err
	}
	if !ok {
		return a, o.errf("num_bits", "is required")
	}
	a.bits = bits
	if a.typ, ok, err = o.str("type"); err != nil {
		return a, err
	}
	if !ok {
		a.typ = "int" // the QuantizationArgs default
	}
	if a.typ != "int" && a.typ != "float" {
		return a, o.errf("type", "%q is not int or float", a.typ)
	}
	if a.strategy, _, err = o.str("strategy"); err != nil {
		return a, err
	}
	if a.group, _, err = o.int("group_size"); err != nil {
		return a, err
	}
	if a.block, _, err = o.blockSize("block_structure"); err != nil {
		return a, err
	}
	if v, present := o.get("dynamic"); present {
		switch t := v.(type) {
		case bool:
			a.dynamic = t
		case string: // "local": dynamic per group, static global scale (NVFP4)
			a.dynamic = t == "local"
			if t != "local" {
				return a, o.errf("dynamic", "%q is not true, false or \"local\"", t)
			}
		default:
			return a, o.errf("dynamic", "must be a boolean, not %s", jsonKind(v))
		}
	}
	return a, nil
}

// ctScheme maps one compressed-tensors group's weight and input-activation
// arguments to a scheme; acts is nil for weight-only groups.
func ctScheme(w ctArgs, acts *ctArgs, field string, file string) (scheme models.QuantScheme, group int, block []int, err error) {
	bad := func(format string, args ...any) (models.QuantScheme, int, []int, error) {
		return "", 0, nil, &FileError{File: file, Field: field, Err: fmt.Errorf(format, args...)}
	}
	actIs := func(typ string, bits int) bool { return acts != nil && acts.typ == typ && acts.bits == bits }
	switch {
	case w.typ == "float" && w.bits == 8:
		if acts == nil {
			return models.SchemeFP8WeightOnly, 0, nil, nil
		}
		if !actIs("float", 8) {
			return bad("fp8 weights with %d-bit %s activations are not supported (want fp8 or none)", acts.bits, acts.typ)
		}
		switch w.strategy {
		case "block":
			if len(w.block) == 0 {
				return bad("weights.block_structure is required for the block strategy")
			}
			return models.SchemeFP8Block, 0, w.block, nil
		case "channel":
			return models.SchemeFP8PerChannel, 0, nil, nil
		case "tensor", "":
			return models.SchemeFP8PerTensor, 0, nil, nil
		}
		return bad("fp8 weights with strategy %q are not supported (want tensor, channel or block)", w.strategy)
	case w.typ == "int" && w.bits == 8:
		switch {
		case acts == nil:
			return models.SchemeINT8WeightOnly, groupOf(w), nil, nil
		case actIs("int", 8):
			return models.SchemeINT8W8A8, 0, nil, nil
		}
		return bad("int8 weights with %d-bit %s activations are not supported (want int8 or none)", acts.bits, acts.typ)
	case w.typ == "int" && w.bits == 4:
		switch {
		case acts == nil:
			return models.SchemeINT4WeightOnly, groupOf(w), nil, nil
		case actIs("float", 8):
			return models.SchemeINT4W4A8FP8, groupOf(w), nil, nil
		}
		return bad("int4 weights with %d-bit %s activations are not supported (want fp8 or none)", acts.bits, acts.typ)
	case w.typ == "float" && w.bits == 4:
		switch w.group {
		case 16:
			switch {
			case acts == nil:
				return models.SchemeNVFP4WeightOnly, 16, nil, nil
			case actIs("float", 4) && (acts.group == 0 || acts.group == 16):
				return models.SchemeNVFP4, 16, nil, nil
			}
			return bad("nvfp4 weights with %d-bit %s activations are not supported (want fp4 or none)", acts.bits, acts.typ)
		case 32:
			if acts == nil {
				return models.SchemeMXFP4, 32, nil, nil
			}
			return bad("mxfp4 weights with quantised activations are not supported")
		}
		return bad("fp4 weights in groups of %d are not supported (want 16, NVFP4, or 32, MXFP4)", w.group)
	}
	return bad("%d-bit %s weights are not supported (want 8-bit float or int, 4-bit int or float)", w.bits, w.typ)
}

// groupOf is the group size of group-strategy weights (0 per channel).
func groupOf(w ctArgs) int {
	if w.strategy == "group" || w.strategy == "tensor_group" {
		return w.group
	}
	return 0
}

// readCompressedTensors reads config_groups, ignore and kv_cache_scheme.
// required says whether config_groups must be there.
func (s *quantSpec) readCompressedTensors(q qobj, lenient bool, ignored *[]string, required bool) error {
	groups, ok, err := q.obj("config_groups")
	if err != nil {
		return err
	}
	if !ok {
		if required {
			return q.errf("config_groups", "is required")
		}
	} else if err := s.readCTGroups(groups, lenient, ignored); err != nil {
		return err
	}
	if err := s.readExcluded(q, "ignore"); err != nil {
		return err
	}
	if sp, ok, err := q.obj("sparsity_config"); err != nil {
		return err
	} else if ok {
		if f, _, err := sp.str("format"); err != nil {
			return err
		} else if f != "" && f != "dense" {
			return sp.errf("format", "sparse %q checkpoints are not supported", f)
		}
	}
	kv, ok, err := q.obj("kv_cache_scheme")
	if err != nil || !ok {
		return err
	}
	a, err := readCTArgs(kv, lenient, ignored)
	if err != nil {
		return err
	}
	switch {
	case a.typ == "float" && a.bits == 8:
		s.kv = hardware.FP8
	case a.typ == "int" && a.bits == 8:
		s.kv = hardware.INT8
	default:
		return kv.errf("num_bits", "a %d-bit %s KV cache is not supported (want 8-bit float or int)", a.bits, a.typ)
	}
	return nil
}

func (s *quantSpec) readCTGroups(groups qobj, lenient bool, ignored *[]string) error {
	names := make([]string, 0, len(groups.m))
	for k := range groups.m {
		names = append(names, k)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return &FileError{File: groups.file, Field: groups.field, Err: errors.New("has no groups")}
	}
	if len(names) > maxQuantGroups {
		return &FileError{File: groups.file, Field: groups.field, Err: fmt.Errorf("has more than %d groups", maxQuantGroups)}
	}
	s.groupsFile, s.groupsField = groups.file, groups.field
	first := ""
	for _, name := range names {
		g, _, err := groups.obj(name)
		if err != nil {
			return err
		}
		if g.m == nil {
			return groups.errf(name, "must be an object")
		}
		if err := g.checkKeys(quantKeysCTGroup, lenient, ignored); err != nil {
			return err
		}
		targets, ok, err := g.strs("targets")
		if err != nil {
			return err
		}
		if !ok || len(targets) == 0 {
			return g.errf("targets", "is required")
		}
		expertsOnly, err := ctTargets(g, targets)
		if err != nil {
			return err
		}
		wo, ok, err := g.obj("weights")
		if err != nil {
			return err
		}
		if !ok {
			return g.errf("weights", "is required (activation-only quantisation is not supported)")
		}
		w, err := readCTArgs(wo, lenient, ignored)
		if err != nil {
			return err
		}
		var acts *ctArgs
		if ao, ok, err := g.obj("input_activations"); err != nil {
			return err
		} else if ok {
			a, err := readCTArgs(ao, lenient, ignored)
			if err != nil {
				return err
			}
			acts = &a
		}
		if _, ok := g.get("output_activations"); ok {
			return g.errf("output_activations", "output activation quantisation is not supported")
		}
		scheme, group, block, err := ctScheme(w, acts, g.field, g.file)
		if err != nil {
			return err
		}
		act := ""
		if acts != nil {
			act = "static"
			if acts.dynamic {
				act = "dynamic"
			}
		}
		if first == "" {
			first = name
			s.scheme, s.group, s.block, s.actScheme, s.expertsOnly = scheme, group, block, act, expertsOnly
			continue
		}
		if scheme != s.scheme || group != s.group || fmt.Sprint(block) != fmt.Sprint(s.block) || act != s.actScheme {
			return groups.errf(name, "scheme %s (group %d) differs from %s's %s (group %d): groups with different schemes are not supported", scheme, group, first, s.scheme, s.group)
		}
		s.expertsOnly = s.expertsOnly && expertsOnly
	}
	return nil
}

// ctTargets reports whether a group's targets name only the routed experts;
// a target of every linear layer ("Linear", "re:.*") is the other case
// Headroom models.
func ctTargets(g qobj, targets []string) (expertsOnly bool, err error) {
	all, experts := false, 0
	for _, t := range targets {
		l := strings.ToLower(t)
		switch {
		case l == "linear" || l == "re:.*" || l == "re:.*linear.*":
			all = true
		case strings.Contains(l, "expert") && !strings.Contains(l, "shared"):
			experts++
		default:
			return false, g.errf("targets", "target %q: only Linear (every linear layer) or the routed experts are supported", t)
		}
	}
	return !all && experts == len(targets), nil
}
