package catalogs

import (
	"errors"
	"fmt"
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
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{
		gpus: map[string]*hardware.GPU{}, models: map[string]*models.Model{},
		gpuAlias: map[string]string{}, modelAlias: map[string]string{},
		gpuSource: map[string]string{}, modelSource: map[string]string{},
	}
}

func key(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// AddGPU validates g and adds it, replacing an entry with the same id (a
// user catalog overrides the built-in one).
func (c *Catalog) AddGPU(g *hardware.GPU, source string) error {
	if err := g.Validate(); err != nil {
		return err
	}
	id := key(g.ID)
	if _, ok := c.gpus[id]; !ok {
		c.gpuOrder = append(c.gpuOrder, id)
	}
	if other, ok := c.gpuAlias[id]; ok && other != id {
		return &hardware.FieldError{Field: "id", Reason: fmt.Sprintf("%q is already an alias of GPU %q", g.ID, other)}
	}
	c.gpus[id] = g
	c.gpuSource[id] = source
	c.gpuAlias[id] = id
	for _, a := range g.Aliases {
		if other, ok := c.gpuAlias[key(a)]; ok && other != id {
			return &hardware.FieldError{Field: "aliases", Reason: fmt.Sprintf("%q already names GPU %q", a, other)}
		}
		c.gpuAlias[key(a)] = id
	}
	return nil
}

// AddModel validates m and adds it, replacing an entry with the same id.
func (c *Catalog) AddModel(m *models.Model, source string) error {
	if err := m.Validate(); err != nil {
		return err
	}
	id := key(m.ID)
	if _, ok := c.models[id]; !ok {
		c.modelOrder = append(c.modelOrder, id)
	}
	if other, ok := c.modelAlias[id]; ok && other != id {
		return &hardware.FieldError{Field: "id", Reason: fmt.Sprintf("%q is already an alias of model %q", m.ID, other)}
	}
	c.models[id] = m
	c.modelSource[id] = source
	c.modelAlias[id] = id
	names := m.Aliases
	if m.HFID != "" {
		names = append(slices.Clone(names), m.HFID)
	}
	for _, a := range names {
		if other, ok := c.modelAlias[key(a)]; ok && other != id {
			return &hardware.FieldError{Field: "aliases", Reason: fmt.Sprintf("%q already names model %q", a, other)}
		}
		c.modelAlias[key(a)] = id
	}
	return nil
}

// GPU finds a GPU by id or alias.
func (c *Catalog) GPU(name string) (*hardware.GPU, error) {
	if id, ok := c.gpuAlias[key(name)]; ok {
		return c.gpus[id], nil
	}
	return nil, fmt.Errorf("%w %q%s", ErrUnknownGPU, name, suggest(name, c.gpuOrder))
}

// Model finds a model by id, alias or Hugging Face id.
func (c *Catalog) Model(name string) (*models.Model, error) {
	if id, ok := c.modelAlias[key(name)]; ok {
		return c.models[id], nil
	}
	return nil, fmt.Errorf("%w %q%s", ErrUnknownModel, name, suggest(name, c.modelOrder))
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

// Clone returns a copy that can be extended without changing c.
func (c *Catalog) Clone() *Catalog {
	n := New()
	for _, id := range c.gpuOrder {
		_ = n.AddGPU(c.gpus[id], c.gpuSource[id])
	}
	for _, id := range c.modelOrder {
		_ = n.AddModel(c.models[id], c.modelSource[id])
	}
	return n
}

// suggest names up to three known ids close to name.
func suggest(name string, ids []string) string {
	k := key(name)
	type cand struct {
		id string
		d  int
	}
	var cs []cand
	for _, id := range ids {
		d := editDistance(k, id)
		if strings.Contains(id, k) || strings.Contains(k, id) {
			d = min(d, 2)
		}
		if d <= max(3, len(k)/3) {
			cs = append(cs, cand{id, d})
		}
	}
	if len(cs) == 0 {
		return ""
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var names []string
	for i := 0; i < len(cs) && i < 3; i++ {
		names = append(names, cs[i].id)
	}
	return " (did you mean " + strings.Join(names, ", ") + "?)"
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
