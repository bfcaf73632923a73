package catalogs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLongNamesAreUnknownAtOnce (issue 23): a 900 KB id is unknown before
// any "did you mean" matching, which cost 8.4 s of CPU per lookup.
func TestLongNamesAreUnknownAtOnce(t *testing.T) {
	cat, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("llama-3.1-8b", 900_000/12)
	start := time.Now()
	for range 10 {
		if _, err := cat.Model(long); !errors.Is(err, ErrUnknownModel) || strings.Contains(err.Error(), "did you mean") {
			t.Fatalf("Model(900 KB) = %v", err)
		}
		if _, err := cat.GPU(long); !errors.Is(err, ErrUnknownGPU) {
			t.Fatalf("GPU(900 KB) = %v", err)
		}
		if s := suggest(long, cat.modelOrder, cat.modelAlias); s != "" {
			t.Fatalf("suggest(900 KB) = %q", s)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("10 lookups of a 900 KB name took %s", d)
	}
	if len(err2(cat.Model(long))) > 200 {
		t.Errorf("the error echoes the name: %d bytes", len(err2(cat.Model(long))))
	}
	// A name at the bound is still matched and suggested.
	if _, err := cat.Model("llama-3.1-8bx"); err == nil || !strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Model(llama-3.1-8bx) = %v, want a suggestion", err)
	}
}

func err2[T any](_ T, err error) string { return err.Error() }
