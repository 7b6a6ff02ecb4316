// Command bench measures Tollgate end to end and prints one table of figures beside their targets:
// the engine's Decide and Compile costs, the decision endpoint over loopback HTTP (a child process
// with GOMAXPROCS=1), propagation of API writes to decisions in envtest, and the size and memory of
// a large bundle. It writes the same figures to bench/results.json and, with -readme, into the
// README's performance section. Run it with `make bench` from the repository root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/bench/internal/report"
	"github.com/tollgate-dev/tollgate/bench/internal/sysinfo"
	"github.com/tollgate-dev/tollgate/internal/testenv"
)

// config is the command line.
type config struct {
	root        string        // repository root
	tollgateBin string        // the built tollgate binary
	serverBin   string        // the built bench/cmd/benchserver
	runs        int           // repetitions of each run-level measurement
	trials      int           // propagation trials of each kind
	benchDur    time.Duration // target duration of each testing.Benchmark
	loadDur     time.Duration // duration of each HTTP load run
	out         string        // results.json path
	readme      string        // README to update ("" = leave it alone)
	only        []string      // stages to run (empty = all)
	deadline    time.Duration // the whole run must end within this
	fleet       fleetConfig   // the fleet stage
}

// Stage names, as -only takes them.
const (
	stageHTTP        = "http"
	stageEngine      = "engine"
	stageScale       = "scale"
	stagePropagation = "propagation"
	stageMCP         = "mcp"
	stageReports     = "reports"
	stageFleet       = "fleet"
)

// stageNames are the stages in the order they run: the HTTP stage first, while this process's heap
// is still small.
var stageNames = []string{stageHTTP, stageEngine, stageScale, stagePropagation, stageMCP, stageFleet, stageReports}

// tableOrder is the order of the stages' rows in the table (the numbering).
var tableOrder = []string{stageEngine, stageHTTP, stagePropagation, stageScale, stageFleet, stageMCP, stageReports}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags() (config, error) {
	root := testenv.RepoRoot()
	cfg := config{root: root}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&cfg.runs, "runs", 5, "repetitions of each measurement (medians with min–max are reported)")
	fs.IntVar(&cfg.trials, "trials", 60, "propagation trials of each kind (at least 50 for the published figures)")
	fs.DurationVar(&cfg.benchDur, "benchtime", 500*time.Millisecond, "duration of each engine benchmark run")
	fs.DurationVar(&cfg.loadDur, "load-duration", 4*time.Second, "duration of each HTTP load run")
	fs.StringVar(&cfg.out, "out", filepath.Join(root, "bench", "results.json"), "where to write the results as JSON (\"\" = nowhere)")
	fs.StringVar(&cfg.readme, "readme", "", "README whose performance section to rewrite with the table (\"\" = none)")
	only := fs.String("only", "", "comma-separated stages to run: "+strings.Join(stageNames, ","))
	fs.DurationVar(&cfg.deadline, "deadline", 30*time.Minute, "abort when the whole run takes longer")
	bindFleetFlags(fs, &cfg.fleet)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return cfg, fmt.Errorf("parsing flags: %w", err)
	}
	if cfg.runs < 1 || cfg.trials < 1 {
		return cfg, errors.New("-runs and -trials must be positive")
	}
	if *only != "" {
		for s := range strings.SplitSeq(*only, ",") {
			if !slices.Contains(stageNames, s) {
				return cfg, fmt.Errorf("unknown stage %q (want %s)", s, strings.Join(stageNames, ","))
			}
			cfg.only = append(cfg.only, s)
		}
	}
	return cfg, nil
}

func run() error {
	cfg, err := parseFlags()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.deadline)
	defer cancel()

	started := time.Now()
	res := report.Results{Machine: sysinfo.Machine(), Started: started}
	res.LoadAverage[0] = sysinfo.LoadAverage()
	progress("machine: %s", res.Machine)
	dir, err := os.MkdirTemp("", "tollgate-bench-")
	if err != nil {
		return fmt.Errorf("creating a temporary directory: %w", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	progress("building tollgate and benchserver")
	if cfg.tollgateBin, cfg.serverBin, err = buildBinaries(ctx, cfg.root, dir); err != nil {
		return err
	}
	stages := map[string]func(context.Context, config) ([]report.Row, []string, error){
		stageHTTP: benchHTTP, stageEngine: benchEngine, stageScale: benchScale, stagePropagation: benchPropagation,
		stageMCP: benchMCP, stageFleet: benchFleet, stageReports: benchReports,
	}
	stageRows, stageNotes := map[string][]report.Row{}, map[string][]string{}
	for _, name := range stageNames {
		if len(cfg.only) > 0 && !slices.Contains(cfg.only, name) {
			continue
		}
		t := time.Now()
		progress("stage %s: starting", name)
		rows, notes, err := stages[name](ctx, cfg)
		if err != nil {
			return fmt.Errorf("stage %s: %w", name, err)
		}
		stageRows[name], stageNotes[name] = rows, notes
		progress("stage %s: done in %s", name, time.Since(t).Round(time.Second))
		runtime.GC()
	}
	for _, name := range tableOrder {
		res.Rows = append(res.Rows, stageRows[name]...)
		res.Notes = append(res.Notes, stageNotes[name]...)
	}
	res.Notes = append(res.Notes, "Absolute numbers depend on the machine and on what else runs on it; compare figures from one machine only.")
	res.Duration = time.Since(started).Round(time.Second).String()
	res.LoadAverage[1] = sysinfo.LoadAverage()

	text := res.Text()
	fmt.Println()
	fmt.Print(text)
	if cfg.out != "" {
		data, err := res.JSON()
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg.out, data, 0o644); err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
		progress("wrote %s", cfg.out)
	}
	if cfg.readme != "" {
		if err := updateReadme(cfg.readme, res); err != nil {
			return err
		}
		progress("updated the performance section of %s", cfg.readme)
	}
	return nil
}

// updateReadme rewrites the README's performance section with the results.
func updateReadme(path string, res report.Results) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading README: %w", err)
	}
	body := "## Performance\n\n" +
		"`make bench` measures Tollgate end to end on the machine it runs on and prints this table (medians over\n" +
		"repeated runs, with the min–max range), writing the same figures to `bench/results.json`. The figures below\n" +
		"come from one run on a 2-core machine shared with other work (see the load average); absolute numbers depend on\n" +
		"the machine and its load, so compare runs on one machine. Reproduce with `make bench`;\n" +
		"`make bench BENCH_FLAGS=\"-readme README.md\"` also rewrites this section.\n\n" +
		res.Text()
	out, err := report.ReplaceSection(string(doc), body)
	if err != nil {
		return fmt.Errorf("updating README: %w", err)
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		return fmt.Errorf("writing README: %w", err)
	}
	return nil
}

// progress reports what the benchmark is doing on stderr (the table goes to stdout).
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}
