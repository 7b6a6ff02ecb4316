package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/policy/shell"
)

func TestAnalysisCache(t *testing.T) {
	c := newAnalysisCache()
	var limits passportLimits // no limits: every command that parses passes
	analyze := func(src string) (*shell.Script, error) {
		a, v := limits.checkCommand(c, src, "")
		if v.code != "" {
			return nil, errors.New(v.msg)
		}
		return a.script, nil
	}
	a, err := analyze("git status")
	if err != nil {
		t.Fatal(err)
	}
	b, err := analyze("git status")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("a repeated command was analysed again")
	}
	if _, err := analyze("echo 'unterminated"); err == nil {
		t.Fatal("a command that does not parse was analysed")
	}
	if _, ok := c.byCmd["echo 'unterminated"]; ok {
		t.Fatal("a failed analysis was kept")
	}
	long := "echo " + strings.Repeat("x", analysisCacheMaxSource)
	if _, err := analyze(long); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.byCmd[long]; ok {
		t.Fatal("a command over analysisCacheMaxSource was kept")
	}
	// A short command whose analysis is large (brace expansion) is analysed but not kept.
	wide := "echo {a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"
	s, err := analyze(wide)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Commands[0].Args) != 128 {
		t.Fatalf("brace expansion gave %d words, want 128", len(s.Commands[0].Args))
	}
	if _, ok := c.byCmd[wide]; ok {
		t.Fatal("an analysis over analysisCacheMaxWords was kept")
	}
	// The cache holds at most analysisCacheEntries commands, evicting the oldest.
	for i := range analysisCacheEntries + 10 {
		if _, err := analyze(fmt.Sprintf("ls dir%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.byCmd) != analysisCacheEntries || len(c.order) != analysisCacheEntries {
		t.Fatalf("cache holds %d (%d in order), want %d", len(c.byCmd), len(c.order), analysisCacheEntries)
	}
	if _, ok := c.byCmd["git status"]; ok {
		t.Fatal("the oldest entry was not evicted")
	}
	if _, ok := c.byCmd[fmt.Sprintf("ls dir%d", analysisCacheEntries+9)]; !ok {
		t.Fatal("the newest entry is missing")
	}
}

// TestAnalysisCacheSharedDecisions decides the same commands from many goroutines (run with -race):
// cached analyses are shared read-only, and the decisions equal those of a snapshot deciding each
// command for the first time.
func TestAnalysisCacheSharedDecisions(t *testing.T) {
	commands := []string{"git status", "rm -rf /", "ls && sudo id", "cat /etc/shadow", "git log -3 | cat", "echo hi > ~/.bashrc"}
	fresh := func() *Snapshot { return compileSample(t) }
	want := map[string]string{}
	for _, cmd := range commands {
		d := fresh().Decide(context.Background(), Request{Passport: "dev", ToolName: "bash", ToolInput: map[string]any{"command": cmd}})
		want[cmd] = d.Decision + " " + d.Reasons[0].Code
	}
	snap := fresh()
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(commands)*50)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				cmd := commands[(g+i)%len(commands)]
				d := snap.Decide(context.Background(), Request{Passport: "dev", ToolName: "bash", ToolInput: map[string]any{"command": cmd}})
				if got := d.Decision + " " + d.Reasons[0].Code; got != want[cmd] {
					errs <- fmt.Sprintf("%q: %s, want %s", cmd, got, want[cmd])
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if want["rm -rf /"] == want["git status"] {
		t.Fatalf("the sample decides rm -rf / like git status (%s): the test proves nothing", want["git status"])
	}
}

// TestVerdictMemoPerPassport decides the same commands under more passports than an entry keeps
// verdicts for, with and without a working directory, over and over: every decision must equal the
// one a fresh snapshot gives, so a verdict kept for one passport (or for no working directory) is
// never handed to another passport (or to a call in a directory).
func TestVerdictMemoPerPassport(t *testing.T) {
	var passports []Passport
	allowed := [][]any{{"git", "ls"}, {"ls"}, {"git"}, {"*"}, {"ls", "cat"}, {"git", "cat"}, {"cat"}}
	for i, cmds := range allowed {
		p := passport(fmt.Sprintf("p%d", i), nil, CapCommandExecute)
		lim := map[string]any{"allowed_commands": cmds}
		if i%2 == 1 {
			lim["blocked_paths"] = []any{"/srv/secret/**"}
		}
		p.Spec.Limits = map[string]any{CapCommandExecute: lim}
		passports = append(passports, p)
	}
	bundle := Bundle{Version: BundleVersion, Namespace: "agents", Passports: passports}
	compile := func() *Snapshot {
		s, err := Compile(bundle, WithClock(fixedClock))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	type call struct{ passport, cmd, dir string }
	var calls []call
	for _, p := range passports {
		for _, cmd := range []string{"git status", "ls -la", "cat secret/key", "cat ../secret/key", "ls && git log"} {
			for _, dir := range []string{"", "/srv", "/home"} {
				calls = append(calls, call{p.Name, cmd, dir})
			}
		}
	}
	decide := func(s *Snapshot, c call) string {
		in := map[string]any{"command": c.cmd}
		if c.dir != "" {
			in["cwd"] = c.dir
		}
		d := s.Decide(context.Background(), Request{Passport: c.passport, ToolName: "bash", ToolInput: in})
		return d.Decision + " " + d.Reasons[0].Code
	}
	want := map[call]string{}
	outcomes := map[string]bool{}
	for _, c := range calls {
		want[c] = decide(compile(), c)
		outcomes[want[c]] = true
	}
	if len(outcomes) < 3 {
		t.Fatalf("the calls give only %v: the test proves nothing", outcomes)
	}
	snap := compile()
	for round := range 3 {
		for i := range calls {
			c := calls[(i*7+round)%len(calls)]
			if got := decide(snap, c); got != want[c] {
				t.Errorf("round %d, %+v: %s, want %s", round, c, got, want[c])
			}
		}
	}
}
