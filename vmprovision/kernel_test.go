package vmprovision

import (
	"slices"
	"strings"
	"testing"
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
