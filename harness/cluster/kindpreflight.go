package cluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootproof/bootproof/internal/kindhost"
)

// ErrNoContainerEngine is returned by KindPreflight when neither docker
// nor podman answers.
var ErrNoContainerEngine = errors.New("kind needs a container engine, and neither docker nor podman is reachable here; 'make test' and 'bootproof run --cluster embedded' run the catalog without one")

// KindPreflight checks that a container engine answers (docker info, then
// podman info).
func KindPreflight(ctx context.Context) error {
	_, err := kindEngine(ctx)
	return err
}

// kindEngine returns the path of the first container engine that answers.
func kindEngine(ctx context.Context) (string, error) {
	var tried []string
	for _, engine := range []string{"docker", "podman"} {
		path, err := exec.LookPath(engine)
		if err != nil {
			tried = append(tried, engine+": not installed")
			continue
		}
		c, cancel := context.WithTimeout(ctx, 20*time.Second)
		out, err := exec.CommandContext(c, path, "info", "--format", "{{.ServerVersion}}").CombinedOutput()
		cancel()
		if err == nil {
			return path, nil
		}
		tried = append(tried, fmt.Sprintf("%s info: %v: %s", engine, err, firstLine(out)))
	}
	return "", fmt.Errorf("%w (%v)", ErrNoContainerEngine, tried)
}

// kindNetwork is the network kind puts its nodes on.
const kindNetwork = "kind"

// LocalKindImagePrefix starts the names of the node images 'make
// kind-image' builds here; they can only come from that build.
const LocalKindImagePrefix = "bootproof/kind-node:"

// ErrKindImageMissing is returned when the node image is neither in the
// engine's store nor pullable.
var ErrKindImageMissing = errors.New("kind node image missing")

// ErrPrivilegedRefused is returned when the engine cannot start a
// privileged container, as kind's nodes are.
var ErrPrivilegedRefused = errors.New("the container engine refuses privileged containers")

// KindImagePreflight checks that image is in the engine's store (pulling
// it when it is not one built here) and that the engine starts a
// privileged container from it, as kind does for its nodes. On a host
// whose root lacks capabilities the error names them and 'make
// deps-kind', which registers a runtime shim that drops them.
func KindImagePreflight(ctx context.Context, image string) error {
	engine, err := kindEngine(ctx)
	if err != nil {
		return err
	}
	if exec.CommandContext(ctx, engine, "image", "inspect", image).Run() != nil {
		if strings.HasPrefix(image, LocalKindImagePrefix) {
			return fmt.Errorf("%w: %s is not in %s's image store: build it with 'make kind-image' (make e2e-kind does, with KIND_NODE_IMAGE=local)", ErrKindImageMissing, image, filepath.Base(engine))
		}
		c, cancel := context.WithTimeout(ctx, 5*time.Minute)
		out, err := exec.CommandContext(c, engine, "pull", image).CombinedOutput()
		cancel()
		if err != nil {
			return fmt.Errorf("%w: %s is not here and could not be pulled (%v: %s); where no registry is reachable, build a node image with 'make kind-image' and give it with --kind-image (make e2e-kind KIND_NODE_IMAGE=local)",
				ErrKindImageMissing, image, err, lastLine(out))
		}
	}
	out, err := exec.CommandContext(ctx, engine, "run", "--rm", "--privileged", "--network", "none", "--entrypoint", "/bin/true", image).CombinedOutput()
	if err == nil {
		return nil
	}
	missing, capErr := kindhost.MissingCapabilities()
	switch {
	case capErr == nil && len(missing) > 0:
		return fmt.Errorf("%w: a privileged container from %s failed (%s); this host's root lacks %s, which --privileged asks for: 'make deps-kind' (root) registers a runtime shim that drops only those (internal/kindhost)",
			ErrPrivilegedRefused, image, lastLine(out), strings.Join(missing, ", "))
	default:
		return fmt.Errorf("%w: a privileged container from %s failed: %v: %s", ErrPrivilegedRefused, image, err, lastLine(out))
	}
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func firstLine(b []byte) string {
	for i, c := range b {
		if c == '\n' {
			return string(b[:i])
		}
	}
	return string(b)
}
