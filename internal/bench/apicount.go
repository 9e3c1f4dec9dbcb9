package bench

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/reports"
)

// APIRequest is one request a client made to the API server.
type APIRequest struct {
	At time.Time
	// Client names who made it (say "reconciler" or "kubelet").
	Client string
	// Verb is the Kubernetes verb: get, list, watch, create, update,
	// patch, delete, deletecollection; for a path that names no resource,
	// the HTTP method in lower case.
	Verb string
	// Resource is resource[/subresource], followed by .group outside the
	// core group ("pods/status", "leases.coordination.k8s.io");
	// "nonresource" for other paths.
	Resource string
}

// Write reports whether the request changes state (create, update,
// patch, delete, deletecollection).
func (r APIRequest) Write() bool {
	switch r.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// APICounter records the requests the clients it wraps make, with the
// time of each, so a benchmark can count what a unit of work (a reload)
// costs in API requests. The zero value is ready to use.
type APICounter struct {
	mu   sync.Mutex
	reqs []APIRequest
}

// Wrap returns a copy of cfg whose requests are recorded as client's.
func (c *APICounter) Wrap(cfg *rest.Config, client string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{c: c, client: client, next: rt}
	})
	return cfg
}

// Requests returns the requests made at or after from and before to.
func (c *APICounter) Requests(from, to time.Time) []APIRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []APIRequest
	for _, r := range c.reqs {
		if !r.At.Before(from) && r.At.Before(to) {
			out = append(out, r)
		}
	}
	return out
}

func (c *APICounter) add(r APIRequest) {
	c.mu.Lock()
	c.reqs = append(c.reqs, r)
	c.mu.Unlock()
}

type countingTransport struct {
	c      *APICounter
	client string
	next   http.RoundTripper
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb, resource := Classify(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	t.c.add(APIRequest{At: time.Now(), Client: t.client, Verb: verb, Resource: resource})
	return t.next.RoundTrip(req)
}

// Classify names the Kubernetes verb and resource of a request by its
// method, URL path and watch query parameter, as the API server's request
// info does for /api and /apis paths.
func Classify(method, path, watch string) (verb, resource string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return strings.ToLower(method), "nonresource"
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:] // a namespaced resource; "namespaces/<ns>" alone is a namespace
	}
	resource = parts[0]
	named := len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	if group != "" {
		if i := strings.IndexByte(resource, '/'); i >= 0 {
			resource = resource[:i] + "." + group + resource[i:]
		} else {
			resource += "." + group
		}
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch == "true" || watch == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}

// Tally groups reqs by client, verb and resource (writes only when
// writes is set), with each group's count divided by units; sorted by
// client, then the most frequent first.
func Tally(reqs []APIRequest, units int, writes bool) []reports.RequestCount {
	type key struct{ client, verb, resource string }
	n := map[key]int{}
	for _, r := range reqs {
		if writes && !r.Write() {
			continue
		}
		n[key{r.Client, r.Verb, r.Resource}]++
	}
	out := make([]reports.RequestCount, 0, len(n))
	for k, total := range n {
		rc := reports.RequestCount{Client: k.client, Verb: k.verb, Resource: k.resource, Total: total}
		if units > 0 {
			rc.PerUnit = float64(total) / float64(units)
		}
		out = append(out, rc)
	}
	slices.SortFunc(out, func(a, b reports.RequestCount) int {
		return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(b.Total, a.Total),
			cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Verb, b.Verb))
	})
	return out
}
