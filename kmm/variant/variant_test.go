package variant

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, s := range []string{"", "none"} {
		if n, err := Parse(s); err != nil || n != None {
			t.Errorf("Parse(%q) = %q, %v; want None", s, n, err)
		}
	}
	for _, v := range All {
		if n, err := Parse(string(v.Name)); err != nil || n != v.Name {
			t.Errorf("Parse(%q) = %q, %v", v.Name, n, err)
		}
		if v.Kind != Defect && v.Kind != Slow || v.Summary == "" {
			t.Errorf("variant %+v: kind and summary required", v)
		}
	}
	if _, err := Parse("slow"); err == nil || !strings.Contains(err.Error(), "accepted: none, boot-from-node") {
		t.Errorf("Parse(slow) = %v, want the accepted names", err)
	}
	if _, ok := Lookup(None); ok {
		t.Error("None is no variant")
	}
}
