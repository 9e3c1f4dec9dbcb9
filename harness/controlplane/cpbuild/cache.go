package cpbuild

import (
	"fmt"
	"os"
	"path/filepath"
)

// CacheDir is the per-user directory 'bootproof controlplane build' writes
// to and the binaries' search looks in last:
// $XDG_CACHE_HOME/bootproof/controlplane/<kubernetes version> (on Linux
// $XDG_CACHE_HOME defaults to ~/.cache; see os.UserCacheDir).
func CacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the user's cache directory: %w (set $XDG_CACHE_HOME or $HOME)", err)
	}
	return filepath.Join(base, "bootproof", "controlplane", KubernetesVersion()), nil
}
