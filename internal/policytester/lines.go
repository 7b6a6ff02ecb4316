package policytester

import (
	"bytes"
	"errors"
	"io"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// caseLines finds where each case of each Test document of a file starts: for the i-th Test
// document (in file order, as Parse returns them), the 1-based line of each item of its cases. It
// reads the YAML node tree (a JSON file is YAML too); a file it cannot read gives no lines, and the
// reports then name the file alone.
func caseLines(data []byte) [][]int {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out [][]int
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if !errors.Is(err, io.EOF) {
				return nil // Parse reports the problem; lines of a file it accepted never get here
			}
			return out
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		root := doc.Content[0]
		kind, version := mappingValue(root, "kind"), mappingValue(root, "apiVersion")
		if kind == nil || kind.Value != Kind || version == nil || !strings.HasPrefix(version.Value, "cli.tollgate.dev/") {
			continue
		}
		var lines []int
		if cases := mappingValue(root, "cases"); cases != nil && cases.Kind == yaml.SequenceNode {
			for _, c := range cases.Content {
				lines = append(lines, c.Line)
			}
		}
		out = append(out, lines)
	}
}

// mappingValue returns the value of key in mapping node m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
