package kindhost

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzDropCapabilities feeds arbitrary process objects to the shim's
// rewriting: no input may panic; what it rewrites is still an object
// with every field but the capability sets as it was, none of the
// dropped capabilities is left in any set, and rewriting again changes
// nothing.
func FuzzDropCapabilities(f *testing.F) {
	f.Add([]byte(`{"terminal":false,"user":{"uid":0,"gid":0},"args":["sh"],"capabilities":{"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"],"effective":["CAP_SYS_RESOURCE"],"permitted":["CAP_SYS_RESOURCE","CAP_CHOWN"],"ambient":null}}`), "CAP_SYS_RESOURCE")
	f.Add([]byte(`{"args":["sh"]}`), "CAP_SYS_ADMIN")
	f.Add([]byte(`{"capabilities":null}`), "CAP_NET_ADMIN")
	f.Add([]byte(`{"capabilities":{"bounding":"CAP_CHOWN"}}`), "CAP_CHOWN")
	f.Fuzz(func(t *testing.T, process []byte, drop string) {
		dropped := []string{drop}
		out, changed, err := DropCapabilities(process, dropped)
		if err != nil {
			return
		}
		if !changed {
			if string(out) != string(process) {
				t.Fatalf("unchanged, but the bytes differ:\n%s\n%s", process, out)
			}
			return
		}
		var before, after map[string]json.RawMessage
		if err := json.Unmarshal(process, &before); err != nil {
			t.Fatalf("rewrote what does not decode: %v", err)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("the rewrite does not decode: %v\n%s", err, out)
		}
		for k, v := range before {
			if k == "capabilities" {
				continue
			}
			if !jsonEqual(v, after[k]) {
				t.Fatalf("field %s changed: %s -> %s", k, v, after[k])
			}
		}
		var sets map[string]json.RawMessage
		if err := json.Unmarshal(after["capabilities"], &sets); err != nil {
			t.Fatalf("capabilities: %v", err)
		}
		for _, name := range capabilitySets {
			var caps []string
			if raw, ok := sets[name]; ok && json.Unmarshal(raw, &caps) == nil && slices.Contains(caps, drop) {
				t.Fatalf("%s still holds %s: %s", name, drop, out)
			}
		}
		again, changedAgain, err := DropCapabilities(out, dropped)
		if err != nil || changedAgain || string(again) != string(out) {
			t.Fatalf("a second rewrite changed it (%v, %t):\n%s\n%s", err, changedAgain, out, again)
		}
	})
}

// jsonEqual compares two JSON values by meaning, not bytes.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	ea, _ := json.Marshal(x)
	eb, _ := json.Marshal(y)
	return string(ea) == string(eb)
}
