// Command helmlint lints Helm charts with Helm's Go packages, as `helm lint --strict` does, with
// no helm binary: the chart's default values, then each values file given after the chart.
//
//	go run ./hack/helmlint charts/tollgate [values.yaml...]
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/internal/chartrender"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: helmlint CHART_DIR [VALUES_FILE...]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run lints dir with its default values and with each values file.
func run(dir string, valuesFiles []string) error {
	sets := []struct {
		name   string
		values map[string]any
	}{{name: "default values"}}
	for _, f := range valuesFiles {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading values: %w", err)
		}
		var v map[string]any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return fmt.Errorf("values file %s: %w", f, err)
		}
		sets = append(sets, struct {
			name   string
			values map[string]any
		}{f, v})
	}
	for _, s := range sets {
		msgs, err := chartrender.Lint(dir, "", s.values)
		for _, m := range msgs {
			fmt.Printf("%s (%s): %s\n", dir, s.name, m.Error())
		}
		if err != nil {
			return err
		}
		fmt.Printf("%s (%s): linted, no warnings or errors\n", dir, s.name)
	}
	return nil
}
