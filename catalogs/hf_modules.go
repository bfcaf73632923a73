package catalogs

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/headroom-sim/headroom/models"
)

// exclPattern is one entry of a checkpoint's list of unquantised modules
// (modules_to_not_convert, compressed-tensors ignore, ModelOpt
// exclude_modules), with where it was read for errors.
type exclPattern struct {
	text, file, field string
}

// exclusions matches module names against such a list. The tools spell
// entries three ways, and each is read as its tool means it:
//   - "re:REGEX" (compressed-tensors): a regular expression matched at the
//     start of the module name (Python's re.match);
//   - a pattern with * or ? (ModelOpt, transformers): a shell-style
//     wildcard matching the whole name of the module or of a parent;
//   - a plain name: the module itself, its submodules, or any module with
//     that name as a dotted part ("lm_head", "gate", "self_attn",
//     "model.layers.3.mlp.gate"), so "gate" does not match "gate_proj".
type exclusions struct {
	literals map[string]bool
	res      []*regexp.Regexp
}

func compileExclusions(pats []exclPattern) (*exclusions, error) {
	e := &exclusions{literals: map[string]bool{}}
	for _, p := range pats {
		var expr string
		switch {
		case strings.HasPrefix(p.text, "re:"):
			expr = "^(?:" + strings.TrimPrefix(p.text, "re:") + ")"
		case strings.ContainsAny(p.text, "*?"):
			var b strings.Builder
			b.WriteString("^")
			for _, r := range p.text {
				switch r {
				case '*':
					b.WriteString(".*")
				case '?':
					b.WriteString(".")
				default:
					b.WriteString(regexp.QuoteMeta(string(r)))
				}
			}
			b.WriteString(`(?:\..*)?$`)
			expr = b.String()
		default:
			if p.text != "" {
				e.literals[p.text] = true
			}
			continue
		}
		if len(e.res) == maxRegexPatterns {
			return nil, &FileError{File: p.file, Field: p.field, Err: fmt.Errorf("more than %d wildcard or regular-expression patterns", maxRegexPatterns)}
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, &FileError{File: p.file, Field: p.field, Err: fmt.Errorf("pattern %q: %v", p.text, err)}
		}
		e.res = append(e.res, re)
	}
	return e, nil
}

// excluded reports whether the module name is on the list.
func (e *exclusions) excluded(name string) bool {
	if len(e.literals) > 0 {
		parts := strings.Split(name, ".")
		for i := range parts {
			for j := i + 1; j <= len(parts); j++ {
				if e.literals[strings.Join(parts[i:j], ".")] {
					return true
				}
			}
		}
	}
	for _, re := range e.res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// layerPrefixes are where the decoder layers sit: causal LMs, and the
// language model of multimodal wrappers (transformers ≥ 4.52, and older).
var layerPrefixes = []string{"model.layers.", "model.language_model.layers.", "language_model.model.layers."}

// layerExcluded reports whether every module of one group of a layer
// (suffixes, e.g. the attention projections) is excluded, under one of the
// layer prefixes.
func (e *exclusions) layerExcluded(layer int, suffixes []string) bool {
	n := strconv.Itoa(layer)
	for _, p := range layerPrefixes {
		all := true
		for _, s := range suffixes {
			if !e.excluded(p + n + "." + s) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// examinedLayers are the layers among first..last-1 whose modules are
// matched: all of them, or for a model deeper than maxLayersExamined the
// first ones and the last.
func examinedLayers(first, last int) []int {
	var out []int
	for i := first; i < last && len(out) < maxLayersExamined; i++ {
		out = append(out, i)
	}
	if len(out) > 0 && out[len(out)-1] != last-1 {
		out = append(out, last-1)
	}
	return out
}

func (e *exclusions) allExcluded(layers []int, variants ...[]string) bool {
	for _, l := range layers {
		ok := false
		for _, v := range variants {
			if e.layerExcluded(l, v) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// analyse reports which parts of m the list leaves unquantised in every
// layer: the attention projections, the dense MLPs (true when there are
// none) and the shared experts (true when there are none).
func (e *exclusions) analyse(m *models.Model) (attention, dense, shared bool) {
	if len(e.literals) == 0 && len(e.res) == 0 {
		return false, m.NumDenseLayers() == 0, m.MoE == nil || m.MoE.NumSharedExperts == 0
	}
	attn := []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"}
	if a := m.MLA; a != nil {
		attn = []string{"self_attn.kv_a_proj_with_mqa", "self_attn.kv_b_proj", "self_attn.o_proj", "self_attn.q_proj"}
		if a.QLoRARank > 0 {
			attn = append(attn[:3], "self_attn.q_a_proj", "self_attn.q_b_proj")
		}
	}
	attention = e.allExcluded(examinedLayers(0, m.NumLayers), attn)
	denseLayers := examinedLayers(0, m.NumDenseLayers())
	dense = e.allExcluded(denseLayers, []string{"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
	shared = true
	if m.MoE != nil && m.MoE.NumSharedExperts > 0 {
		moeLayers := examinedLayers(m.NumDenseLayers(), m.NumLayers)
		shared = e.allExcluded(moeLayers,
			[]string{"mlp.shared_experts.gate_proj", "mlp.shared_experts.up_proj", "mlp.shared_experts.down_proj"},
			[]string{"mlp.shared_expert.gate_proj", "mlp.shared_expert.up_proj", "mlp.shared_expert.down_proj"})
	}
	return attention, dense, shared
}

var layerNumberRE = regexp.MustCompile(`(^|\.)layers\.(\d+)(\.|\*|$)`)

// foldLayerPatterns shortens a module list for the catalog entry: entries
// that differ only in the layer number and cover every one of the layers
// layers become one entry with "*" for the number; the rest stay as they
// are. Duplicates are dropped; the order of first appearance is kept.
func foldLayerPatterns(pats []exclPattern, layers int) []string {
	type fold struct {
		numbers   map[int]bool
		originals []string
	}
	folds := map[string]*fold{}
	var order []string
	seen := map[string]bool{}
	for _, p := range pats {
		t := p.text
		if seen[t] {
			continue
		}
		seen[t] = true
		key, n := t, -1
		if loc := layerNumberRE.FindStringSubmatchIndex(t); loc != nil && !strings.HasPrefix(t, "re:") {
			if v, err := strconv.Atoi(t[loc[4]:loc[5]]); err == nil {
				key, n = t[:loc[4]]+"*"+t[loc[5]:], v
			}
		}
		f, ok := folds[key]
		if !ok {
			f = &fold{numbers: map[int]bool{}}
			folds[key] = f
			order = append(order, key)
		}
		if n >= 0 {
			f.numbers[n] = true
		}
		f.originals = append(f.originals, t)
	}
	var out []string
	for _, key := range order {
		f := folds[key]
		if len(f.numbers) > 0 && len(f.numbers) == layers && coversLayers(f.numbers, layers) {
			out = append(out, key)
			continue
		}
		out = append(out, f.originals...)
	}
	return out
}

func coversLayers(numbers map[int]bool, layers int) bool {
	for i := 0; i < layers; i++ {
		if !numbers[i] {
			return false
		}
	}
	return true
}
