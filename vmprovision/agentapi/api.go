package agentapi

import (
	"net/url"
	"time"
)

// State is the agent's answer to GET PathState: the boot it runs in, the
// kernel release and the modules loaded in this boot (/proc/modules), in
// load order as the kernel lists them.
type State struct {
	BootID        string   `json:"bootID"`
	KernelVersion string   `json:"kernelVersion"`
	Modules       []string `json:"modules"`
}

// The control API's paths. Every request needs the node's secret (see
// HeaderAuthorization): without it the answer is 401. Errors are answered
// as text with an HTTP status: 404 for an unknown module, 409 for a module
// in use, 400 for a bad query.
const (
	// PathState (GET) answers State as JSON.
	PathState = "/state"
	// PathReboot (POST) reboots the guest with reboot(2) once the answer
	// (202 Accepted) is sent.
	PathReboot = "/reboot"
	// PathPanic (POST) panics the kernel through sysrq once the answer
	// (202 Accepted) is sent; the guest runs with panic=1, so it reboots.
	PathPanic = "/panic"
	// PathRestartKubelet (POST, with QueryDowntime) stops the agent's
	// kubelet, waits the downtime and starts it again in the same boot;
	// it answers once the kubelet runs again.
	PathRestartKubelet = "/restart-kubelet"
	// PathModules is the prefix of a module's path, PathModules+name: PUT
	// loads the module like modprobe, DELETE unloads it like modprobe -r.
	PathModules = "/modules/"
	// PathDial (POST, with QueryAddr and QueryTimeout) opens a TCP
	// connection from inside the guest and closes it again, and answers
	// DialResult as JSON: a diagnostic of what the guest can reach.
	PathDial = "/dial"
)

// QueryDowntime is PathRestartKubelet's query parameter: a non-negative
// Go duration such as 15s.
const QueryDowntime = "downtime"

// PathDial's query parameters: QueryAddr is host:port as the guest dials
// it; QueryTimeout a positive Go duration, at most MaxDialTimeout (empty:
// DefaultDialTimeout).
const (
	QueryAddr          = "addr"
	QueryTimeout       = "timeout"
	DefaultDialTimeout = 3 * time.Second
	MaxDialTimeout     = 30 * time.Second
)

// DialResult is the agent's answer to PathDial: whether the connection
// was established, else the dial error, and how long the attempt took.
type DialResult struct {
	Addr      string        `json:"addr"`
	Connected bool          `json:"connected"`
	Error     string        `json:"error,omitempty"`
	Took      time.Duration `json:"took"`
}

// DialPath is the path and query that dial addr from the guest.
func DialPath(addr string, timeout time.Duration) string {
	q := url.Values{QueryAddr: {addr}}
	if timeout > 0 {
		q.Set(QueryTimeout, timeout.String())
	}
	return PathDial + "?" + q.Encode()
}

// ModulePath is the path of a module (PathModules+name).
func ModulePath(name string) string { return PathModules + name }

// RestartKubeletPath is the path and query that restart the kubelet with
// the given downtime.
func RestartKubeletPath(downtime time.Duration) string {
	return PathRestartKubelet + "?" + QueryDowntime + "=" + downtime.String()
}
