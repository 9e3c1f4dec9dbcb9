package kindhost

import (
	"fmt"
	"strings"

	"github.com/moby/sys/capability"
)

// MissingCapabilities returns, as OCI names ("CAP_SYS_RESOURCE"), the
// capabilities the running kernel knows that are not in this process's
// bounding set: what a privileged container started from here cannot get.
func MissingCapabilities() ([]string, error) {
	last, err := capability.LastCap()
	if err != nil {
		return nil, fmt.Errorf("read the kernel's last capability: %w", err)
	}
	var missing []string
	for c := capability.Cap(0); c <= last; c++ {
		bound, err := capability.GetBound(c)
		if err != nil {
			return nil, fmt.Errorf("read bounding set for %s: %w", OCIName(c), err)
		}
		if !bound {
			missing = append(missing, OCIName(c))
		}
	}
	return missing, nil
}

// OCIName is the name the OCI runtime spec uses for c, e.g.
// CAP_SYS_RESOURCE.
func OCIName(c capability.Cap) string {
	return "CAP_" + strings.ToUpper(c.String())
}
