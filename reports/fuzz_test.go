package reports

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeResults feeds arbitrary bytes to the results.json decoder and
// every report built from what it accepts ('bootproof report' rewrites
// them from a results.json a user may hand it): no input may panic, an
// error names the file, and what decodes encodes to a fixed point.
func FuzzDecodeResults(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.json")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"cases":[{"scenario":"s","subject":"b","verdict":"pass","observed":"pass","expected":"pass","attempt":2}]}`))
	f.Add([]byte(`{"cases":[{"scenario":"s","subject":"b","verdict":"error","assertions":[{"name":"reload","ok":false}],"nodes":[{"name":"n"}]}]}`))
	f.Add([]byte(`{"cases":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeResults("results.json", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "results.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		once, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("decoded results do not encode: %v", err)
		}
		again, err := DecodeResults("results.json", once)
		if err != nil {
			t.Fatalf("encoded results do not decode: %v", err)
		}
		twice, err := json.Marshal(again)
		if err != nil || !bytes.Equal(once, twice) {
			t.Fatalf("not a fixed point (%v):\n%s\n%s", err, once, twice)
		}
		when := time.Unix(0, 0).UTC()
		_ = BuildMatrix(r)
		_ = Summaries(r)
		_ = BuildJUnit("fuzz", r, when)
		_ = BuildLatencyChart(r)
		if _, err := RenderHTML(r, when); err != nil {
			t.Fatalf("render HTML: %v", err)
		}
	})
}
