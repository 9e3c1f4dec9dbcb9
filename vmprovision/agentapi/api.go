package agentapi

import (
	"net/url"
	"strconv"
	"time"
)

// State is the agent's answer to GET PathState: the boot it runs in, the
// kernel release and the modules loaded in this boot (/proc/modules), in
// load order as the kernel lists them.
type State struct {
	BootID        string   `json:"bootID"`
	KernelVersion string   `json:"kernelVersion"`
	Modules       []string `json:"modules"`
	// Boot is when this boot reached its milestones; nil from an agent
	// that does not report them.
	Boot *BootTimes `json:"boot,omitempty"`
}

// BootTimes are the milestones of the guest's boot on the guest's
// CLOCK_BOOTTIME (time since the kernel started its clock). Uptime is
// that clock when the answer was made, so the host places the others on
// its own clock: host time of an event = host time of the answer -
// Uptime + the event. A zero milestone was not reached or not found.
type BootTimes struct {
	// Uptime is the clock when the agent answered.
	Uptime time.Duration `json:"uptime"`
	// Init is when the kernel ran /init (its "Run /init as init
	// process" message in the kernel log).
	Init time.Duration `json:"init,omitempty"`
	// AgentMain is when the agent's main function began (after the Go
	// runtime's and packages' initialisation).
	AgentMain time.Duration `json:"agentMain,omitempty"`
	// KubeletStart is when the kubelet began to register the node (its
	// first request to the API server in this boot).
	KubeletStart time.Duration `json:"kubeletStart,omitempty"`
	// Registered is when the API server accepted the node's first status
	// with this boot's ID (as the guest saw the answer).
	Registered time.Duration `json:"registered,omitempty"`
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
	// PathRejectPods (POST, with QueryCount) has the agent's kubelet
	// reject at admission the next count worker pods it is given (phase
	// Failed, reason UnexpectedAdmissionError); it answers at once.
	PathRejectPods = "/reject-pods"
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

// QueryCount is PathRejectPods' query parameter: how many worker pods,
// a whole number from 0 (none from now on) to MaxRejectPods.
const (
	QueryCount    = "count"
	MaxRejectPods = 100
)

// RejectPodsPath is the path and query that have the kubelet reject its
// next n worker pods.
func RejectPodsPath(n int) string {
	return PathRejectPods + "?" + QueryCount + "=" + strconv.Itoa(n)
}

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
