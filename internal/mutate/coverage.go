package mutate

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Coverage is which of the reconciler's statements the unmutated
// reconciler ran in the catalog: a mutant whose change lies in code no
// scenario ran cannot be killed, so it is not judged (as PIT reports "no
// coverage"); the triage must explain it.
type Coverage struct {
	// Blocks are the profile's blocks, by file path in the module.
	Blocks map[string][]Block
	// Statements and Covered count the packages' statements.
	Statements, Covered int
}

// Block is one block of a coverage profile.
type Block struct {
	StartLine, StartCol, EndLine, EndCol int
	Statements, Count                    int
}

// ReadCoverage converts the counter files in dir ($GOCOVERDIR of the
// processes) into a profile with 'go tool covdata textfmt' and reads it;
// module is the module's path, which the profile's file names start with.
func ReadCoverage(ctx context.Context, dir, module string) (*Coverage, error) {
	profile := filepath.Join(dir, "profile.txt")
	cmd := exec.CommandContext(ctx, goCommand(), "tool", "covdata", "textfmt", "-i="+dir, "-o="+profile)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go tool covdata textfmt -i=%s: %w: %s", dir, err, strings.TrimSpace(string(out)))
	}
	data, err := os.ReadFile(profile)
	if err != nil {
		return nil, err
	}
	return parseProfile(data, module)
}

// parseProfile reads a text coverage profile: a "mode:" line, then one
// line per block, "file:startLine.startCol,endLine.endCol statements
// count" (the format of go test -coverprofile). Blocks listed more than
// once (one per counter file) are merged.
func parseProfile(data []byte, module string) (*Coverage, error) {
	c := &Coverage{Blocks: map[string][]Block{}}
	seen := map[string]int{} // "file:range" -> index in Blocks[file]
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 && strings.HasPrefix(line, "mode:") || line == "" {
			continue
		}
		colon := strings.LastIndexByte(line, ':')
		fields := strings.Fields(line[colon+1:])
		if colon < 0 || len(fields) != 3 {
			return nil, fmt.Errorf("coverage profile line %d: %q: not file:range statements count", n, line)
		}
		var b Block
		if _, err := fmt.Sscanf(fields[0], "%d.%d,%d.%d", &b.StartLine, &b.StartCol, &b.EndLine, &b.EndCol); err != nil {
			return nil, fmt.Errorf("coverage profile line %d: range %q: %w", n, fields[0], err)
		}
		var err error
		if b.Statements, err = strconv.Atoi(fields[1]); err != nil {
			return nil, fmt.Errorf("coverage profile line %d: statements %q: %w", n, fields[1], err)
		}
		if b.Count, err = strconv.Atoi(fields[2]); err != nil {
			return nil, fmt.Errorf("coverage profile line %d: count %q: %w", n, fields[2], err)
		}
		file := strings.TrimPrefix(line[:colon], module+"/")
		key := file + ":" + fields[0]
		if i, ok := seen[key]; ok {
			c.Blocks[file][i].Count += b.Count
			continue
		}
		seen[key] = len(c.Blocks[file])
		c.Blocks[file] = append(c.Blocks[file], b)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, bs := range c.Blocks {
		for _, b := range bs {
			c.Statements += b.Statements
			if b.Count > 0 {
				c.Covered += b.Statements
			}
		}
	}
	return c, nil
}

// Reached reports whether the catalog ran the code m changes: a block
// holding its position ran, or its file has no blocks there (a
// declaration outside any function, which coverage does not count).
func (c *Coverage) Reached(m Mutant) bool {
	if c == nil {
		return true
	}
	in := false
	for _, b := range c.Blocks[m.File] {
		if !b.holds(m.Line, m.Column) {
			continue
		}
		in = true
		if b.Count > 0 {
			return true
		}
	}
	return !in
}

func (b Block) holds(line, col int) bool {
	after := line > b.StartLine || line == b.StartLine && col >= b.StartCol
	before := line < b.EndLine || line == b.EndLine && col < b.EndCol
	return after && before
}
