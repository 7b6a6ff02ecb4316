// Command helmtemplate prints the embedded Tollgate chart rendered with Helm's Go packages, as
// `helm template --include-crds` does, with no helm binary.
//
//	go run ./hack/helmtemplate [-name tollgate] [-namespace tollgate-system] [-f values.yaml] [-set key=value]...
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tollgate-dev/tollgate/internal/chartrender"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	var opts chartrender.Options
	var valuesFile string
	var sets stringList
	flag.StringVar(&opts.ReleaseName, "name", chartrender.DefaultReleaseName, "release name")
	flag.StringVar(&opts.Namespace, "namespace", chartrender.DefaultNamespace, "release namespace")
	flag.StringVar(&valuesFile, "f", "", "values file")
	flag.Var(&sets, "set", "key=value (repeatable), as helm --set")
	flag.BoolVar(&opts.SkipCRDs, "skip-crds", false, "leave out the CRDs")
	flag.Parse()
	opts.Set = sets
	if err := run(opts, valuesFile); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(opts chartrender.Options, valuesFile string) error {
	if valuesFile != "" {
		data, err := os.ReadFile(valuesFile)
		if err != nil {
			return fmt.Errorf("reading values: %w", err)
		}
		if err := yaml.Unmarshal(data, &opts.Values); err != nil {
			return fmt.Errorf("values file %s: %w", valuesFile, err)
		}
	}
	out, err := chartrender.Manifest(opts)
	if err != nil {
		return err
	}
	_, err = os.Stdout.WriteString(out)
	return err
}
