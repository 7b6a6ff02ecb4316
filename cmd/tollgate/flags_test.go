package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// parseCommand builds the named command's flag set, parses args as runCommand does and returns
// the command with its positional arguments.
func parseCommand(t *testing.T, name string, args ...string) (command, []string) {
	t.Helper()
	info, ok := commands()[name]
	if !ok {
		t.Fatalf("no command %q", name)
	}
	cmd := info.new()
	fs := newFlagSet(name, info.synopsis, io.Discard)
	cmd.BindFlags(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		t.Fatalf("tollgate %s %v: %v", name, args, err)
	}
	return cmd, rest
}

// flagSetOf returns the flags the named command registers.
func flagSetOf(t *testing.T, name string) *flag.FlagSet {
	t.Helper()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	commands()[name].new().BindFlags(fs)
	return fs
}

// TestDeprecatedAliases checks every deprecated flag names a flag of its command, that the old
// spellings are registered only as deprecated aliases, and that each command keeps the aliases
// existing command lines use.
func TestDeprecatedAliases(t *testing.T) {
	want := map[string][]string{
		"serve":   {"addr", "metrics-addr", "namespace"},
		"eval":    {"namespace"},
		"demo":    {"addr"},
		"decider": {"log-json", "decision-log-tool-input"},
	}
	oldSpellings := []string{"addr", "metrics-addr", "log-json", "namespace", "decision-log-tool-input"}
	for name := range commands() {
		fs := flagSetOf(t, name)
		var got []string
		fs.VisitAll(func(f *flag.Flag) {
			cur, deprecated := strings.CutPrefix(f.Usage, deprecatedPrefix)
			if !deprecated {
				if slices.Contains(oldSpellings, f.Name) {
					t.Errorf("tollgate %s: --%s is an old spelling but not marked deprecated", name, f.Name)
				}
				return
			}
			got = append(got, f.Name)
			target, _, _ := strings.Cut(cur, " ")
			if fs.Lookup(target) == nil {
				t.Errorf("tollgate %s: --%s is an alias of --%s, which the command lacks", name, f.Name, target)
			}
		})
		for _, a := range want[name] {
			if !slices.Contains(got, a) {
				t.Errorf("tollgate %s: lacks the deprecated alias --%s (has %v)", name, a, got)
			}
		}
	}
}

// TestFlagNamesAcrossCommands checks the shared spellings: every command serving the decision API
// takes --bind-address, and the long-running ones --log-format.
func TestFlagNamesAcrossCommands(t *testing.T) {
	for name, flags := range map[string][]string{
		"serve":   {"bind-address", "metrics-bind-address", "log-format", "default-namespace", "kubeconfig", "token-audience", "decision-log", "decision-log-include-input", "f", "filename", "counter-store", "counter-store-timeout"},
		"decider": {"bind-address", "log-format", "default-namespace", "kubeconfig", "token-audience", "decision-log", "decision-log-include-input", "counter-store", "counter-store-timeout", "rate-limiter-keys"},
		"demo":    {"bind-address"},
		"manager": {"metrics-bind-address", "health-probe-bind-address", "log-format", "kubeconfig", "zap-encoder"},
		"eval":    {"default-namespace", "f", "filename"},
		"hook":    {"url", "passport", "token-file"},
	} {
		fs := flagSetOf(t, name)
		for _, f := range flags {
			if fs.Lookup(f) == nil {
				t.Errorf("tollgate %s lacks --%s", name, f)
			}
		}
	}
}

func TestOldSpellingsSetTheNewFlags(t *testing.T) {
	t.Run("serve", func(t *testing.T) {
		cmd, rest := parseCommand(t, "serve", "--addr", "127.0.0.1:9", "--metrics-addr", "127.0.0.1:10",
			"--namespace", "team-a", "config/samples")
		c := cmd.(*serveCommand)
		if c.listen.addr != "127.0.0.1:9" || c.listen.metricsAddr != "127.0.0.1:10" || c.defaultNamespace != "team-a" {
			t.Errorf("listen %+v, default namespace %q", c.listen, c.defaultNamespace)
		}
		if !slices.Equal(rest, []string{"config/samples"}) {
			t.Errorf("positional %v", rest)
		}
		cmd, _ = parseCommand(t, "serve", "--bind-address", ":0", "--addr", "127.0.0.1:1")
		if c := cmd.(*serveCommand); c.listen.addr != "127.0.0.1:1" {
			t.Errorf("the last of --bind-address and --addr should win: %q", c.listen.addr)
		}
	})
	t.Run("decider log format", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{nil, logFormatJSON},
			{[]string{"--log-json=false"}, logFormatText},
			{[]string{"--log-json"}, logFormatJSON},
			{[]string{"--log-format", "text"}, logFormatText},
			{[]string{"--log-json=false", "--log-format=json"}, logFormatJSON},
		} {
			cmd, _ := parseCommand(t, "decider", tc.args...)
			if got := cmd.(*deciderCommand).log.format; got != tc.want {
				t.Errorf("decider %v: log format %q, want %q", tc.args, got, tc.want)
			}
		}
	})
	t.Run("decider decision log input", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want bool
		}{
			{nil, false},
			{[]string{"--decision-log-tool-input"}, true},
			{[]string{"--decision-log-include-input"}, true},
			// As before: either flag includes the input.
			{[]string{"--decision-log-include-input", "--decision-log-tool-input=false"}, true},
		} {
			cmd, _ := parseCommand(t, "decider", tc.args...)
			o := cmd.(*deciderCommand).decisionLog
			if got := o.includeInput || o.toolInput; got != tc.want {
				t.Errorf("decider %v: include input %v, want %v", tc.args, got, tc.want)
			}
		}
	})
	t.Run("demo and eval", func(t *testing.T) {
		cmd, _ := parseCommand(t, "demo", "--addr", "127.0.0.1:0")
		if c := cmd.(*demoCommand); c.listen.addr != "127.0.0.1:0" {
			t.Errorf("demo --addr: %q", c.listen.addr)
		}
		cmd, _ = parseCommand(t, "eval", "--namespace", "team-b")
		if c := cmd.(*evalCommand); c.defaultNamespace != "team-b" {
			t.Errorf("eval --namespace: %q", c.defaultNamespace)
		}
	})
}

func TestWarnDeprecated(t *testing.T) {
	fs := newFlagSet("serve", "", io.Discard)
	newServeCommand().BindFlags(fs)
	if _, err := parseFlags(fs, []string{"--addr", "127.0.0.1:0", "--bind-address", "127.0.0.1:0", "--namespace", "x"}); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	warnDeprecated(fs, &b)
	want := "tollgate serve: flag --addr is deprecated: use --bind-address\n" +
		"tollgate serve: flag --namespace is deprecated: use --default-namespace\n"
	if b.String() != want {
		t.Errorf("warnings:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{errors.New("plain"), exitFailed},
		{usageError("bad %s", "flag"), exitUsage},
		{fmt.Errorf("wrapped: %w", usageError("bad")), exitUsage},
		{&exitError{code: exitFailed, err: errors.New("x")}, exitFailed},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestLogFormatRejectsOthers(t *testing.T) {
	for _, name := range []string{"serve", "decider", "manager"} {
		fs := newFlagSet(name, "", io.Discard)
		commands()[name].new().BindFlags(fs)
		_, err := parseFlags(fs, []string{"--log-format", "xml"})
		if exitCode(err) != exitUsage || !strings.Contains(fmt.Sprint(err), "want text or json") {
			t.Errorf("tollgate %s --log-format xml: %v", name, err)
		}
	}
}

// TestKubeOptions loads a real kubeconfig file through the one loader of the binary.
func TestKubeOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: abc}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	o := kubeOptions{kubeconfig: path, qps: 50, burst: 100}
	cfg, err := o.restConfig("tollgate-test")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" || cfg.BearerToken != "abc" || cfg.UserAgent != "tollgate-test" ||
		cfg.QPS != 50 || cfg.Burst != 100 {
		t.Errorf("config: host %q token %q agent %q qps %v burst %d", cfg.Host, cfg.BearerToken, cfg.UserAgent, cfg.QPS, cfg.Burst)
	}
	o = kubeOptions{kubeconfig: path}
	if cfg, err = o.restConfig(""); err != nil || cfg.QPS != 0 || cfg.Burst != 0 || cfg.UserAgent != "" {
		t.Errorf("without rate flags or agent: %v, qps %v burst %d agent %q", err, cfg.QPS, cfg.Burst, cfg.UserAgent)
	}
	if _, err := o.clientset("tollgate-test"); err != nil {
		t.Errorf("clientset: %v", err)
	}
	o = kubeOptions{kubeconfig: filepath.Join(t.TempDir(), "missing")}
	if _, err := o.clientset("x"); err == nil || !strings.Contains(err.Error(), "loading kubeconfig") {
		t.Errorf("missing kubeconfig: %v", err)
	}
}

// TestDeciderFlagErrors runs the binary: command-line mistakes exit 2 before anything is loaded,
// and a kubeconfig that cannot be loaded exits 1 after the deprecation warning.
func TestDeciderFlagErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name     string
		env      []string
		args     []string
		wantCode int
		want     []string
	}{
		{"no bundle namespace", []string{"POD_NAMESPACE="}, []string{"decider"}, 2, []string{"--bundle-namespace is required"}},
		{"unexpected argument", nil, []string{"decider", "--bundle-namespace", "x", "extra"}, 2, []string{"unexpected arguments"}},
		{"bad log format", nil, []string{"decider", "--log-format", "xml"}, 2, []string{"want text or json"}},
		{"old spelling, missing kubeconfig", nil,
			[]string{"decider", "--bundle-namespace", "x", "--log-json=false", "--kubeconfig", missing}, 1,
			[]string{"flag --log-json is deprecated: use --log-format", "loading kubeconfig"}},
		{"manager bad log format", nil, []string{"manager", "--log-format", "xml"}, 2, []string{"want text or json"}},
		{"manager unexpected argument", nil, []string{"manager", "extra"}, 2, []string{"unexpected arguments"}},
		{"manager missing kubeconfig", nil, []string{"manager", "--kubeconfig", missing}, 1, []string{"loading kubeconfig"}},
		{"help", nil, []string{"decider", "-h"}, 0, []string{"Usage: tollgate decider", "--bind-address string", "--log-format format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, tollgateBin, tt.args...)
			cmd.Env = append(os.Environ(), tt.env...)
			res := runCmd(t, cmd)
			if res.code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstderr: %s", res.code, tt.wantCode, res.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.stderr)
				}
			}
			// Help shows the current spellings only; the old ones still work (above) but are not taught.
			if tt.name == "help" && (strings.Contains(res.stderr, "--log-json") || strings.Contains(res.stderr, deprecatedPrefix)) {
				t.Errorf("help lists a deprecated flag:\n%s", res.stderr)
			}
		})
	}
}

// TestServeNewSpellings starts serve with the current spellings (after the --addr startServe gives,
// which is warned about once): the metrics listener, JSON logs and the default namespace all take.
func TestServeNewSpellings(t *testing.T) {
	base, logs, stop := startServe(t, "-f", "config/samples", "--bind-address", "127.0.0.1:0",
		"--metrics-bind-address", "127.0.0.1:0", "--log-format", "json", "--default-namespace", "default")
	m := regexp.MustCompile(`metrics on (http://\S+/metrics)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics address in:\n%s", logs.String())
	}
	if d := postDecide(t, base, lsRequest); d["decision"] != "allow" {
		t.Errorf("decision %v, want allow", d)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `tollgate_decisions_total{code="oap.allowed",outcome="allow"`) {
		t.Errorf("metrics listener: %d %.300s", resp.StatusCode, body)
	}
	if code := stop(); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
	out := logs.String()
	if n := strings.Count(out, "deprecated"); n != 1 || !strings.Contains(out, "tollgate serve: flag --addr is deprecated: use --bind-address") {
		t.Errorf("want exactly the --addr deprecation warning, got %d warnings:\n%s", n, out)
	}
	if !strings.Contains(out, `{"time":`) || !strings.Contains(out, `"msg":"loaded manifests"`) {
		t.Errorf("the operational logs are not JSON:\n%s", out)
	}
}
