package replay

import (
	"fmt"
	"slices"
	"strings"

	"github.com/headroom-sim/headroom/catalogs"
	"github.com/headroom-sim/headroom/internal/adapter/measured"
)

// ResolveModel finds the catalog model a run's recorded model id names:
// the id itself (an id, alias or Hugging Face id), then the names
// measured.ModelCandidates derives from a path, then a catalog model whose
// id, alias or Hugging Face id has the same name after its organisation
// ("Llama-3.3-70B-Instruct" for meta-llama/Llama-3.3-70B-Instruct, as a
// server started with --served-model-name records it). It returns the
// catalog id; an id that names no model, or more than one, is an error
// wrapping catalogs.ErrUnknownModel.
func ResolveModel(cat *catalogs.Catalog, id string) (string, error) {
	if strings.TrimSpace(id) == "" {
		return "", fmt.Errorf("%w: the run does not name its model", catalogs.ErrUnknownModel)
	}
	cands := measured.ModelCandidates(id)
	for _, c := range cands {
		if m, err := cat.Model(c); err == nil {
			return m.ID, nil
		}
	}
	var hits []string
	for _, m := range cat.Models() {
		names := append([]string{m.ID, m.HFID}, m.Aliases...)
		for _, n := range names {
			_, short, _ := strings.Cut(n, "/")
			if short == "" {
				short = n
			}
			if short != "" && slices.ContainsFunc(cands, func(c string) bool { return strings.EqualFold(c, short) }) && !slices.Contains(hits, m.ID) {
				hits = append(hits, m.ID)
			}
		}
	}
	switch len(hits) {
	case 1:
		return hits[0], nil
	case 0:
		_, err := cat.Model(id)
		return "", err
	}
	return "", fmt.Errorf("%w %q: it could be any of %s", catalogs.ErrUnknownModel, id, strings.Join(hits, ", "))
}
