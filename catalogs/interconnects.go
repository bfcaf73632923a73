package catalogs

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/headroom-sim/headroom/hardware"
)

// ErrUnknownInterconnect is returned for an interconnect id the catalog
// does not have.
var ErrUnknownInterconnect = errors.New("unknown interconnect")

//go:embed interconnects.yaml
var interconnectsYAML []byte

// Interconnects is a set of links addressable by id or alias, case
// insensitively, in file order.
type Interconnects struct {
	byName map[string]*hardware.Interconnect
	order  []*hardware.Interconnect
}

var (
	linksOnce sync.Once
	links     *Interconnects
	linksErr  error
)

// BuiltinInterconnects returns the embedded interconnect catalog
// (interconnects.yaml), parsed once. Callers must not modify it.
func BuiltinInterconnects() (*Interconnects, error) {
	linksOnce.Do(func() {
		links, linksErr = LoadInterconnects("interconnects.yaml", bytes.NewReader(interconnectsYAML))
	})
	return links, linksErr
}

// LoadInterconnects parses a YAML stream of interconnect entries (one per
// document), strictly: unknown keys, invalid figures and names used twice
// are errors naming the file, entry and field.
func LoadInterconnects(name string, r io.Reader) (*Interconnects, error) {
	ic := &Interconnects{byName: map[string]*hardware.Interconnect{}}
	err := decodeAll(name, r, func() any { return new(hardware.Interconnect) }, func(v any, line int) error {
		l := v.(*hardware.Interconnect)
		if err := l.Validate(); err != nil {
			return entryError(name, line, l.ID, err)
		}
		for _, n := range append([]string{l.ID}, l.Aliases...) {
			if other, ok := ic.byName[key(n)]; ok {
				return entryError(name, line, l.ID, &hardware.FieldError{Field: "aliases", Reason: fmt.Sprintf("%q already names %q", n, other.ID)})
			}
			ic.byName[key(n)] = l
		}
		ic.order = append(ic.order, l)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ic, nil
}

// Get finds a link by id or alias.
func (ic *Interconnects) Get(name string) (*hardware.Interconnect, error) {
	if l, ok := ic.byName[key(name)]; ok {
		return l, nil
	}
	ids := make([]string, len(ic.order))
	for i, l := range ic.order {
		ids[i] = key(l.ID)
	}
	names := map[string]string{}
	for n, l := range ic.byName {
		names[n] = key(l.ID)
	}
	return nil, fmt.Errorf("%w %q%s", ErrUnknownInterconnect, name, suggest(name, ids, names))
}

// All lists the links in file order.
func (ic *Interconnects) All() []*hardware.Interconnect {
	return append([]*hardware.Interconnect(nil), ic.order...)
}
