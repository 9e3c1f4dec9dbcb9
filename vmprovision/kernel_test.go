package vmprovision

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseAptDepends(t *testing.T) {
	tests := []struct {
		name, out, want, wantErr string
	}{
		{name: "bookworm", out: "linux-image-amd64\n  Depends: linux-image-6.1.0-57-amd64\n", want: "linux-image-6.1.0-57-amd64"},
		{name: "alternatives and recommends", out: "linux-image-amd64\n  Recommends: firmware-linux-free\n |Depends: linux-image-6.12.9-amd64\n  Depends: <linux-image-6.12.8-amd64>\n",
			want: "linux-image-6.12.9-amd64"},
		{name: "virtual", out: "linux-image-cloud-amd64\n  Depends: <linux-image-6.1.0-9-cloud-amd64>\n", want: "linux-image-6.1.0-9-cloud-amd64"},
		{name: "none", out: "linux-image-amd64\n  Breaks: foo\n", wantErr: "no linux-image-* dependency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAptDepends(tt.out, "linux-image-amd64")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestParseAptModuleDepends(t *testing.T) {
	tests := []struct {
		name, out string
		want      []string
	}{
		{name: "debian: modules in the image package", out: "linux-image-6.1.0-57-amd64\n  Depends: kmod\n  Depends: linux-base\n  Recommends: firmware-linux-free\n"},
		{name: "ubuntu noble", out: "linux-image-6.8.0-51-generic\n  Depends: linux-modules-6.8.0-51-generic\n  Depends: linux-base\n |Depends: linux-firmware\n  Recommends: <linux-modules-extra-6.8.0-51-generic>\n  Depends: linux-modules-6.8.0-51-generic\n",
			want: []string{"linux-modules-6.8.0-51-generic"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseAptModuleDepends(tt.out); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestKernelPackageFor: Ubuntu (GitHub's hosted runners) has no
// linux-image-amd64, so the default follows /etc/os-release.
func TestKernelPackageFor(t *testing.T) {
	for _, tc := range []struct{ name, osRelease, want string }{
		{"debian", "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n", DefaultDebianKernelPackage},
		{"ubuntu", "NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\n", DefaultUbuntuKernelPackage},
		{"ubuntu derivative", "ID=pop\nID_LIKE=\"ubuntu debian\"\n", DefaultUbuntuKernelPackage},
		{"no file", "", DefaultDebianKernelPackage},
		{"ubuntu only in a name", "NAME=\"not-ubuntu\"\nID=debian\n", DefaultDebianKernelPackage},
	} {
		if got := KernelPackageFor(tc.osRelease); got != tc.want {
			t.Errorf("%s: KernelPackageFor = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestCachedKernel: a kernel package counts as cached once its unpacking
// completed (.complete), never before; it is then the tree under root.
func TestCachedKernel(t *testing.T) {
	cache := t.TempDir()
	const pkg = "linux-image-6.1.0-test-amd64"
	if _, err := cachedKernel(cache, pkg); !errors.Is(err, ErrNotPrepared) || !strings.Contains(err.Error(), pkg) {
		t.Fatalf("empty cache: %v, want ErrNotPrepared naming %s", err, pkg)
	}
	dir := filepath.Join(cache, pkg)
	if err := os.CopyFS(filepath.Join(dir, "root"), os.DirFS("testdata/image/kernel")); err != nil {
		t.Fatal(err)
	}
	if _, err := cachedKernel(cache, pkg); !errors.Is(err, ErrNotPrepared) {
		t.Fatalf("unpacked but not complete: %v, want ErrNotPrepared", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".complete"), []byte("6.1.0-test-amd64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kt, err := cachedKernel(cache, pkg)
	if err != nil || kt.Version != "6.1.0-test-amd64" || kt.Root != filepath.Join(dir, "root") {
		t.Fatalf("complete: %+v, %v; want 6.1.0-test-amd64 under %s/root", kt, err, dir)
	}
}

// stubAptGet puts an apt-get on PATH that runs script (sh; $2 is the
// package) in the directory it is started in.
func stubAptGet(t *testing.T, script string) {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "apt-get"), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestDownloadDeb: apt-get download writes its .deb under the final name
// as it goes; an interrupted or failed download must leave no .deb that
// a later preparation would take for a downloaded one (and fail to
// unpack), and no temporary directory.
func TestDownloadDeb(t *testing.T) {
	const p = "linux-image-6.1.0-test-amd64"
	entries := func(dir string) []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	t.Run("failed", func(t *testing.T) {
		dir := t.TempDir()
		stubAptGet(t, `printf 'half a package' > "$2_1_amd64.deb"; echo 'E: connection reset' >&2; exit 100`)
		_, err := downloadDeb(t.Context(), dir, p)
		if err == nil || !strings.Contains(err.Error(), "connection reset") {
			t.Fatalf("downloadDeb = %v, want apt-get's error", err)
		}
		if left := entries(dir); len(left) > 0 {
			t.Errorf("left in the cache: %v", left)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		dir := t.TempDir()
		stubAptGet(t, `printf 'half a package' > "$2_1_amd64.deb"; exec sleep 60`)
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		if _, err := downloadDeb(ctx, dir, p); err == nil {
			t.Fatal("downloadDeb past its deadline succeeded")
		}
		if left := entries(dir); len(left) > 0 {
			t.Errorf("left in the cache: %v", left)
		}
	})
	t.Run("downloaded once", func(t *testing.T) {
		dir := t.TempDir()
		stubAptGet(t, `printf 'a package' > "$2_1_amd64.deb"`)
		deb, err := downloadDeb(t.Context(), dir, p)
		if err != nil || deb != filepath.Join(dir, p+"_1_amd64.deb") {
			t.Fatalf("downloadDeb = %q, %v; want %s_1_amd64.deb in %s", deb, err, p, dir)
		}
		if got := entries(dir); !slices.Equal(got, []string{p + "_1_amd64.deb"}) {
			t.Errorf("cache holds %v, want the .deb alone", got)
		}
		stubAptGet(t, `echo 'downloaded again' >&2; exit 1`)
		if again, err := downloadDeb(t.Context(), dir, p); err != nil || again != deb {
			t.Errorf("second downloadDeb = %q, %v; want the cached %s", again, err, deb)
		}
	})
}
