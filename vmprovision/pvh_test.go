package vmprovision

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bzImage returns a minimal bzImage: setup sectors, the boot header
// (protocol version proto) and a payload after the setup code.
func bzImage(setupSects byte, proto uint16, payloadOff, payloadLen uint32, payload string) []byte {
	n := 4
	if setupSects != 0 {
		n = int(setupSects)
	}
	b := make([]byte, (n+1)*512+int(payloadOff))
	b[0x1f1] = setupSects
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], proto)
	binary.LittleEndian.PutUint32(b[0x248:], payloadOff)
	binary.LittleEndian.PutUint32(b[0x24c:], payloadLen)
	return append(b, payload...)
}

func TestBzImagePayload(t *testing.T) {
	for _, tc := range []struct {
		name string
		bz   []byte
		want string
		err  string
	}{
		{name: "payload after setup", bz: bzImage(27, 0x020f, 100, 5, "xzdat+size"), want: "xzdat"},
		{name: "setup_sects 0 means 4", bz: bzImage(0, 0x020f, 0, 4, "gzip"), want: "gzip"},
		{name: "not a bzImage", bz: make([]byte, 4096), err: "no HdrS"},
		{name: "short", bz: []byte("MZ"), err: "no HdrS"},
		{name: "old boot protocol", bz: bzImage(4, 0x0206, 0, 4, "gzip"), err: "want 2.08"},
		{name: "payload beyond the image", bz: bzImage(4, 0x020f, 0, 40, "gzip"), err: "outside"},
		{name: "empty payload", bz: bzImage(4, 0x020f, 0, 0, "gzip"), err: "outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BzImagePayload(tc.bz)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestHasNote(t *testing.T) {
	note := func(name string, typ uint32, desc string) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(len(name)+1))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
		b = binary.LittleEndian.AppendUint32(b, typ)
		b = append(b, name...)
		b = append(b, 0)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		b = append(b, desc...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"pvh note after others", cat(note("GNU", 3, "buildid-bytes"), note("Xen", 6, "linux"), note("Xen", xenElfnotePhys32Entry, "\x00\x00\x00\x01")), true},
		{"only other xen notes", cat(note("Xen", 6, "linux"), note("Xen", 5, "xen-3.0")), false},
		{"type 18 of another owner", note("GNU", xenElfnotePhys32Entry, "abcd"), false},
		{"truncated", note("Xen", xenElfnotePhys32Entry, "abcd")[:14], false},
		{"empty", nil, false},
	} {
		if got := hasNote(tc.data, binary.LittleEndian, "Xen", xenElfnotePhys32Entry); got != tc.want {
			t.Errorf("%s: hasNote = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestFindPVHKernel: FindPVHKernel finds the kernel PVHKernel writes next
// to the bzImage, and nothing before it is written.
func TestFindPVHKernel(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/image/kernel")); err != nil {
		t.Fatal(err)
	}
	kt, err := FindKernelTree(root, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FindPVHKernel(kt); !errors.Is(err, ErrNotPrepared) {
		t.Fatalf("before: %v, want ErrNotPrepared", err)
	}
	want := filepath.Join(root, "boot", "vmlinux-"+kt.Version)
	if err := os.WriteFile(want, []byte("elf"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := FindPVHKernel(kt); err != nil || got != want {
		t.Fatalf("after: %q, %v; want %s", got, err, want)
	}
	if got, err := PVHKernel(t.Context(), kt); err != nil || got != want {
		t.Fatalf("PVHKernel reuses it: %q, %v; want %s", got, err, want)
	}
}
