package kindimage

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"

	"github.com/bootproof/bootproof/contract"
)

// DefaultOperatorRef is the name of bootproof's operator image, as the
// Deployments in examples/deploy/ use it.
const DefaultOperatorRef = "bootproof.local/bootproof:dev"

// OperatorImage is an image archive holding a bootproof executable: what
// a Deployment needs to run 'bootproof kmm' in a cluster.
type OperatorImage struct {
	// Ref is the image's name; default DefaultOperatorRef.
	Ref string
	// Out is the archive's path.
	Out string
	// Executable is the bootproof executable; default the running one.
	Executable string
}

// Validate checks the fields and that the executable is statically
// linked (the image holds nothing else); it joins a *contract.InputError
// per field.
func (o *OperatorImage) Validate() error {
	var errs []error
	if o.Ref == "" {
		o.Ref = DefaultOperatorRef
	}
	if _, err := ParseImageRef(o.Ref); err != nil {
		errs = append(errs, contract.NewInputError("Ref", o.Ref, "accepted: an image name with a tag, e.g. "+DefaultOperatorRef, nil))
	}
	if o.Out == "" {
		errs = append(errs, contract.NewInputError("Out", "", "required: the image archive to write", nil))
	}
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.Executable = exe
	}
	if static, err := IsStatic(o.Executable); err != nil {
		errs = append(errs, contract.NewInputError("Executable", o.Executable, "accepted: a statically linked bootproof executable", err))
	} else if !static {
		errs = append(errs, contract.NewInputError("Executable", o.Executable,
			"dynamically linked, so it cannot run alone in an image: build it with CGO_ENABLED=0 ('make build' does)", nil))
	}
	return errors.Join(errs...)
}

// Write writes the archive, for the executable's architecture.
func (o *OperatorImage) Write() error {
	arch, err := ELFArch(o.Executable)
	if err != nil {
		return err
	}
	return WriteImageArchive(ImageSpec{
		Arch:       arch,
		Ref:        o.Ref,
		Files:      []File{{Path: "/bootproof", Source: o.Executable, Mode: 0o755}},
		Entrypoint: []string{"/bootproof"},
		User:       "65532:65532",
	}, o.Out)
}

// ELFArch names the architecture of the ELF executable at path as GOARCH
// does: amd64 or arm64, the platforms bootproof is released for.
func ELFArch(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s: not an ELF executable: %w", path, err)
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	default:
		return "", fmt.Errorf("%s: an executable for %s: accepted: x86-64 (amd64) or AArch64 (arm64)", path, f.Machine)
	}
}

// IsStatic reports whether the ELF executable at path has no program
// interpreter, i.e. needs no dynamic loader and no shared libraries.
func IsStatic(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}
