package subject

import (
	"testing"

	"github.com/bootproof/bootproof/kmm/detect"
)

// TestNewBundledDetectors: a bundled subject's name is the harness's
// vocabulary and its detector kmm's, mapped once (bundledDetectors), not
// one string serving as both.
func TestNewBundledDetectors(t *testing.T) {
	for name, want := range map[string]string{BootID: detect.BootID, Legacy: detect.Legacy} {
		s, err := New(name, nil)
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		k, ok := s.(*KMM)
		if !ok || k.Name() != name || k.Detector != want {
			t.Errorf("New(%q) = %#v, want a KMM named %q running detector %q", name, s, name, want)
		}
	}
	if len(bundledDetectors) != 2 {
		t.Errorf("bundledDetectors %v: every bundled reconciler and only those", bundledDetectors)
	}
}
