package catalogs

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/hardware"
	"github.com/headroom-sim/headroom/models"
)

// Lookup errors; callers match them with errors.Is (the API maps them to 404).
var (
	ErrUnknownGPU   = errors.New("unknown GPU")
	ErrUnknownModel = errors.New("unknown model")
)

// Catalog is a set of GPUs and models addressable by id or alias, case
// insensitively.
type Catalog struct {
	gpus        map[string]*hardware.GPU
	models      map[string]*models.Model
	gpuAlias    map[string]string
	modelAlias  map[string]string
	gpuOrder    []string
	modelOrder  []string
	gpuSource   map[string]string // id → file it came from
	modelSource map[string]string
	// inherited marks the entries a Clone copied from its base: names that
	// entries added later define take precedence over theirs.
	inheritedGPU   map[string]bool
	inheritedModel map[string]bool
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{
		gpus: map[string]*hardware.GPU{}, models: map[string]*models.Model{},
		gpuAlias: map[string]string{}, modelAlias: map[string]string{},
		gpuSource: map[string]string{}, modelSource: map[string]string{},
		inheritedGPU: map[string]bool{}, inheritedModel: map[string]bool{},
	}
}

func key(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// AddGPU validates g and adds it, replacing an entry with the same id (a
// user catalog overrides the built-in one). A name (id or alias) that
// already names another entry is an error, unless that entry was inherited
// by Clone: then the new entry takes the name and the inherited one keeps
// its other names.
func (c *Catalog) AddGPU(g *hardware.GPU, source string) error {
	if err := g.Validate(); err != nil {
		return err
	}
	id := key(g.ID)
	if err := claimNames(c.gpuAlias, c.inheritedGPU, id, g.Aliases, "GPU", aliasField(len(g.Aliases))); err != nil {
		return err
	}
	if _, ok := c.gpus[id]; !ok {
		c.gpuOrder = append(c.gpuOrder, id)
	}
	c.gpus[id] = g
	c.gpuSource[id] = source
	delete(c.inheritedGPU, id)
	c.gpuAlias[id] = id
	for _, a := range g.Aliases {
		c.gpuAlias[key(a)] = id
	}
	return nil
}

// AddModel validates m and adds it, replacing an entry with the same id;
// its Hugging Face id is one of its names. Names taken from inherited
// entries are handled as in AddGPU.
func (c *Catalog) AddModel(m *models.Model, source string) error {
	if err := m.Validate(); err != nil {
		return err
	}
	id := key(m.ID)
	names := m.Aliases
	if m.HFID != "" {
		names = append(slices.Clone(names), m.HFID)
	}
	if err := claimNames(c.modelAlias, c.inheritedModel, id, names, "model", aliasField(len(m.Aliases))); err != nil {
		return err
	}
	if _, ok := c.models[id]; !ok {
		c.modelOrder = append(c.modelOrder, id)
	}
	c.models[id] = m
	c.modelSource[id] = source
	delete(c.inheritedModel, id)
	c.modelAlias[id] = id
	for _, a := range names {
		c.modelAlias[key(a)] = id
	}
	return nil
}

// claimNames checks, before anything changes, that the id and names of a
// new entry are free: unused, already the entry's own, or an alias held by
// an inherited entry. Another entry's id is never free, inherited or not:
// an alias that took it would make the id name a different entry (a
// catalog directory's alias could otherwise shadow a built-in model).
func claimNames(names map[string]string, inherited map[string]bool, id string, aliases []string, kind string, field func(i int) string) error {
	if other, ok := names[id]; ok && other != id && !inherited[other] {
		return &hardware.FieldError{Field: "id", Reason: fmt.Sprintf("%q is already an alias of %s %q", id, kind, other)}
	}
	for i, a := range aliases {
		k := key(a)
		if k == "" {
			return &hardware.FieldError{Field: field(i), Reason: "an alias must not be empty"}
		}
		other, ok := names[k]
		switch {
		case !ok || other == id:
		case other == k:
			return &hardware.FieldError{Field: field(i), Reason: fmt.Sprintf("%q is the id of %s %q", a, kind, other)}
		case !inherited[other]:
			return &hardware.FieldError{Field: field(i), Reason: fmt.Sprintf("%q already names %s %q", a, kind, other)}
		}
	}
	return nil
}

// MaxNameBytes bounds the names a lookup matches: no id, alias or
// Hugging Face id is longer (models.Model.Validate bounds them), so a
// longer name is unknown at once, before any "did you mean" matching (an
// edit distance costs the product of the lengths).
const MaxNameBytes = 256

// tooLong is the lookup error of a name past MaxNameBytes.
func tooLong(sentinel error, name string) error {
	return fmt.Errorf("%w (a name of %d bytes; none is longer than %d)", sentinel, len(name), MaxNameBytes)
}

// aliasField names the i-th name claimNames checks: aliases up to n, then
// the Hugging Face id.
func aliasField(n int) func(i int) string {
	return func(i int) string {
		if i < n {
			return "aliases"
		}
		return "hf_id"
	}
}

// GPU finds a GPU by id or alias.
func (c *Catalog) GPU(name string) (*hardware.GPU, error) {
	if len(name) > MaxNameBytes {
		return nil, tooLong(ErrUnknownGPU, name)
	}
	if id, ok := c.gpuAlias[key(name)]; ok {
		return c.gpus[id], nil
	}
	return nil, fmt.Errorf("%w %q%s", ErrUnknownGPU, name, suggest(name, c.gpuOrder, c.gpuAlias))
}

// Model finds a model by id, alias or Hugging Face id, in any case. A
// local path as benchmark tools record the model (a Hugging Face cache
// directory .../models--ORG--NAME/snapshots/HASH, or .../ORG/NAME) resolves
// when the repository id it holds names a catalog model.
func (c *Catalog) Model(name string) (*models.Model, error) {
	if len(name) > MaxNameBytes && len(name) > maxModelPathBytes {
		return nil, tooLong(ErrUnknownModel, name)
	}
	if id, ok := c.modelAlias[key(name)]; ok {
		return c.models[id], nil
	}
	for _, alt := range pathModelNames(name) {
		if id, ok := c.modelAlias[key(alt)]; ok {
			return c.models[id], nil
		}
	}
	if len(name) > MaxNameBytes {
		return nil, tooLong(ErrUnknownModel, name)
	}
	return nil, fmt.Errorf("%w %q%s", ErrUnknownModel, name, suggest(name, c.modelOrder, c.modelAlias))
}

// maxModelPathBytes bounds a model path a lookup reads the repository id
// from (benchmark tools record local paths, which may be longer than an
// id): past it a name is unknown at once.
const maxModelPathBytes = 4096

// pathModelNames lists the repository ids a model path may hold: ORG/NAME
// of a Hugging Face cache directory (models--ORG--NAME), else the last two
// and the last path element. Names that are not paths give none.
func pathModelNames(name string) []string {
	p := strings.TrimRight(strings.TrimSpace(name), "/")
	if strings.Count(p, "/") < 2 && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "~") {
		return nil // "ORG/NAME" itself, or a plain id
	}
	parts := strings.Split(p, "/")
	for _, seg := range parts {
		if rest, ok := strings.CutPrefix(seg, "models--"); ok {
			if org, repo, ok := strings.Cut(rest, "--"); ok && org != "" && repo != "" {
				return []string{org + "/" + repo}
			}
		}
	}
	var out []string
	if n := len(parts); n >= 2 && parts[n-2] != "" && parts[n-1] != "" {
		out = append(out, parts[n-2]+"/"+parts[n-1])
	}
	if last := parts[len(parts)-1]; last != "" {
		out = append(out, last)
	}
	return out
}

// GPUs lists the GPUs in catalog order.
func (c *Catalog) GPUs() []*hardware.GPU {
	out := make([]*hardware.GPU, 0, len(c.gpuOrder))
	for _, id := range c.gpuOrder {
		out = append(out, c.gpus[id])
	}
	return out
}

// Models lists the models in catalog order.
func (c *Catalog) Models() []*models.Model {
	out := make([]*models.Model, 0, len(c.modelOrder))
	for _, id := range c.modelOrder {
		out = append(out, c.models[id])
	}
	return out
}

// Clone returns a copy that can be extended without changing c. The
// copied entries are inherited: entries added to the copy may take their
// names (a user catalog naming a built-in model's Hugging Face id gets it).
func (c *Catalog) Clone() *Catalog {
	n := &Catalog{
		gpus: maps.Clone(c.gpus), models: maps.Clone(c.models),
		gpuAlias: maps.Clone(c.gpuAlias), modelAlias: maps.Clone(c.modelAlias),
		gpuOrder: slices.Clone(c.gpuOrder), modelOrder: slices.Clone(c.modelOrder),
		gpuSource: maps.Clone(c.gpuSource), modelSource: maps.Clone(c.modelSource),
		inheritedGPU: map[string]bool{}, inheritedModel: map[string]bool{},
	}
	for _, id := range c.gpuOrder {
		n.inheritedGPU[id] = true
	}
	for _, id := range c.modelOrder {
		n.inheritedModel[id] = true
	}
	return n
}

// suggest names up to three known ids whose id or any other name is close
// to name.
func suggest(name string, ids []string, names map[string]string) string {
	if len(name) > MaxNameBytes {
		return "" // longer than every name: nothing is close, and the distances would cost len² each
	}
	k := key(name)
	best := map[string]int{}
	consider := func(n, id string) {
		d := editDistance(k, n)
		if strings.Contains(n, k) || strings.Contains(k, n) {
			d = min(d, 2)
		}
		if d > max(3, len(k)/3) {
			return
		}
		if old, ok := best[id]; !ok || d < old {
			best[id] = d
		}
	}
	for n, id := range names {
		consider(n, id)
	}
	if len(best) == 0 {
		return ""
	}
	type cand struct {
		id string
		d  int
	}
	var cs []cand
	for _, id := range ids { // catalog order breaks ties
		if d, ok := best[id]; ok {
			cs = append(cs, cand{id, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].id)
	}
	return " (did you mean " + strings.Join(out, ", ") + "?)"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
