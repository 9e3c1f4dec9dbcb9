package cli

import (
	"io"
	"slices"
	"testing"

	"github.com/bootproof/bootproof/scenarios"
)

func names(ss []*scenarios.Scenario) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name)
	}
	return out
}

// --scenario and --label see the scenarios of --scenario-file files as
// well as the catalog's.
func TestSelectScenariosSeesFiles(t *testing.T) {
	file := []string{"../../scenarios/testdata/valid-full.yaml"}
	tests := []struct {
		name                 string
		globs, labels, files []string
		want                 []string
	}{
		{"files alone run the files", nil, nil, file, []string{"example-full"}},
		{"a file's scenario by name", []string{"example-full"}, nil, file, []string{"example-full"}},
		{"a glob over both", []string{"example-*", "fast-reboot-0.5g"}, nil, file, []string{"fast-reboot-0.5g", "example-full"}},
		{"a label over both", nil, []string{"example"}, file, []string{"example-full"}},
		{"the catalog by default", []string{"slow-reboot-*"}, nil, nil, []string{"slow-reboot-1.5g", "slow-reboot-3g"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := selectScenarios(tc.globs, tc.labels, tc.files, newFileWarnings(io.Discard))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(got), tc.want) {
				t.Errorf("selected %v, want %v", names(got), tc.want)
			}
		})
	}
	if _, err := selectScenarios([]string{"example-full"}, nil, nil, newFileWarnings(io.Discard)); err == nil {
		t.Error("a file's scenario was selected without its file")
	}
}
