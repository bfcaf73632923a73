package api

import (
	"testing"

	"github.com/headroom-sim/headroom/catalogs"
)

// The server's kernel databases are the CLI's: every measured GPU's
// tables load, with the family sibling and the previous generation the
// step-time model borrows from.
func TestDomainKernels(t *testing.T) {
	cat, err := catalogs.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDomain(cat, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.PreloadKernels(); err != nil {
		t.Fatal(err)
	}
	g, _ := d.GPU("b200")
	db, err := d.kernels.Load(g, "")
	if err != nil || db == nil {
		t.Fatalf("b200 tables: %v", err)
	}
	if db.Sibling == nil || db.Sibling.System != "b300_sxm" || db.Predecessor == nil || db.Predecessor.System != "h200_sxm" {
		t.Errorf("b200 tables without their sibling (b300_sxm) or predecessor (h200_sxm): %+v %+v", db.Sibling, db.Predecessor)
	}
}
