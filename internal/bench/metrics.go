package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// Latency histograms of kube-apiserver's /metrics the fleet benchmarks read.
const (
	// MetricEtcdRequest is kube-apiserver's view of etcd: the duration of
	// each request it sends to etcd, by operation and type.
	MetricEtcdRequest = "etcd_request_duration_seconds"
	// MetricAPIRequest is the duration of each request kube-apiserver
	// serves, by verb and resource.
	MetricAPIRequest = "apiserver_request_duration_seconds"
	// MetricAPIRequestTotal counts the requests kube-apiserver served, by
	// verb, resource, subresource and code.
	MetricAPIRequestTotal = "apiserver_request_total"
	// MetricTerminatedWatchers counts the watches kube-apiserver's watch
	// cache closed because their clients did not read events in time, by
	// group and resource.
	MetricTerminatedWatchers = "apiserver_terminated_watchers_total"
)

// ParseCounter reads Prometheus text exposition data and sums the series
// of counter name by the key each series' labels map to; a series whose
// key is "" is left out. A metric that is absent gives an empty map.
func ParseCounter(data []byte, name string, key func(labels map[string]string) string) (map[string]float64, error) {
	f, err := family(data, name, dto.MetricType_COUNTER)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		if k := key(labelMap(m)); k != "" {
			out[k] += m.GetCounter().GetValue()
		}
	}
	return out, nil
}

// SubCounters returns now minus an earlier scrape of the same counters,
// key by key: what was counted in between. A key absent earlier counted
// from 0; a counter that fell (a restart) is an error.
func SubCounters(now, earlier map[string]float64) (map[string]float64, error) {
	d := make(map[string]float64, len(now))
	for k, v := range now {
		if v < earlier[k] {
			return nil, fmt.Errorf("counter %s fell from %v to %v (a restart?)", k, earlier[k], v)
		}
		d[k] = v - earlier[k]
	}
	return d, nil
}

// RequestKey is the key ParseCounter sums apiserver_request_total by: the
// verb and the resource with its subresource ("GET nodes", "PATCH
// nodes/status"); "" (left out) for requests to no resource, such as
// /metrics.
func RequestKey(labels map[string]string) string {
	r := labels["resource"]
	if r == "" {
		return ""
	}
	if sub := labels["subresource"]; sub != "" {
		r += "/" + sub
	}
	return labels["verb"] + " " + r
}

// ResourceKey is the key ParseCounter sums a counter by its resource
// and group ("pods", "leases.coordination.k8s.io"); "" (left out) for a
// series without a resource.
func ResourceKey(labels map[string]string) string {
	r := labels["resource"]
	if r == "" {
		return ""
	}
	if g := labels["group"]; g != "" {
		r += "." + g
	}
	return r
}

// family parses Prometheus text exposition data and returns metric name,
// which must be of type typ; nil (no series) when it is absent.
func family(data []byte, name string, typ dto.MetricType) (*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	f, ok := families[name]
	if !ok {
		return nil, nil
	}
	if f.GetType() != typ {
		return nil, fmt.Errorf("metric %s: type %s, want %s", name, f.GetType(), strings.ToLower(typ.String()))
	}
	return f, nil
}

func labelMap(m *dto.Metric) map[string]string {
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}

// Histogram is a Prometheus histogram, the sum of every series of one
// metric that a filter kept: cumulative counts per upper bound (the last
// bound +Inf), the total count and the sum of the observations.
type Histogram struct {
	Bounds []float64
	Counts []float64 // cumulative: observations <= Bounds[i]
	Count  float64
	Sum    float64
}

// ParseHistogram reads Prometheus text exposition data and returns the sum
// of the series of histogram name whose labels keep accepts (nil: all).
// Series with other bucket bounds than the first kept one are an error.
// A metric that is absent gives an empty Histogram.
func ParseHistogram(data []byte, name string, keep func(labels map[string]string) bool) (Histogram, error) {
	f, err := family(data, name, dto.MetricType_HISTOGRAM)
	if err != nil {
		return Histogram{}, err
	}
	var h Histogram
	for _, m := range f.GetMetric() {
		if keep != nil && !keep(labelMap(m)) {
			continue
		}
		hm := m.GetHistogram()
		var bounds, counts []float64
		for _, b := range hm.GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
			counts = append(counts, float64(b.GetCumulativeCount()))
		}
		if len(bounds) == 0 || !math.IsInf(bounds[len(bounds)-1], 1) {
			bounds = append(bounds, math.Inf(1))
			counts = append(counts, float64(hm.GetSampleCount()))
		}
		if h.Bounds == nil {
			h.Bounds, h.Counts = bounds, make([]float64, len(bounds))
		} else if !slices.Equal(h.Bounds, bounds) {
			return Histogram{}, fmt.Errorf("metric %s: series with buckets %v and %v", name, h.Bounds, bounds)
		}
		for i, c := range counts {
			h.Counts[i] += c
		}
		h.Count += float64(hm.GetSampleCount())
		h.Sum += hm.GetSampleSum()
	}
	return h, nil
}

// Sub returns h minus an earlier scrape of the same histogram: the
// observations made in between. An empty earlier scrape subtracts nothing.
func (h Histogram) Sub(earlier Histogram) (Histogram, error) {
	if earlier.Bounds == nil {
		return h, nil
	}
	if h.Bounds == nil {
		return Histogram{}, fmt.Errorf("histogram gone since the earlier scrape")
	}
	if !slices.Equal(h.Bounds, earlier.Bounds) {
		return Histogram{}, fmt.Errorf("histogram buckets changed: %v, earlier %v", h.Bounds, earlier.Bounds)
	}
	d := Histogram{Bounds: h.Bounds, Counts: make([]float64, len(h.Counts)), Count: h.Count - earlier.Count, Sum: h.Sum - earlier.Sum}
	for i := range h.Counts {
		d.Counts[i] = h.Counts[i] - earlier.Counts[i]
		if d.Counts[i] < 0 {
			return Histogram{}, fmt.Errorf("histogram counts fell (a restart?): bucket %v from %v to %v", h.Bounds[i], earlier.Counts[i], h.Counts[i])
		}
	}
	return d, nil
}

// Mean is the mean observation (0 without observations).
func (h Histogram) Mean() float64 {
	if h.Count <= 0 {
		return 0
	}
	return h.Sum / h.Count
}

// Quantile estimates quantile q (0..1) as Prometheus's histogram_quantile
// does: linear interpolation inside the bucket the rank falls in, the
// first bucket starting at 0; a rank in the +Inf bucket gives the highest
// finite bound. Without observations it is 0.
func (h Histogram) Quantile(q float64) float64 {
	n := len(h.Counts)
	if n == 0 || h.Counts[n-1] <= 0 {
		return 0
	}
	rank := q * h.Counts[n-1]
	i, _ := slices.BinarySearch(h.Counts, rank)
	i = min(i, n-1)
	if math.IsInf(h.Bounds[i], 1) {
		if i == 0 {
			return 0
		}
		return h.Bounds[i-1]
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = h.Bounds[i-1], h.Counts[i-1]
	}
	in := h.Counts[i] - below
	if in <= 0 {
		return h.Bounds[i]
	}
	return lo + (h.Bounds[i]-lo)*(rank-below)/in
}

// FetchMetrics GETs /metrics from the API server client talks to.
func FetchMetrics(ctx context.Context, client rest.Interface) ([]byte, error) {
	data, err := client.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("get /metrics: %w", err)
	}
	return data, nil
}
