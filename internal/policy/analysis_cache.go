package policy

import (
	"sync"

	"github.com/google/cel-go/common/types/ref"

	"github.com/tollgate-dev/tollgate/internal/policy/shell"
)

// Bounds of a snapshot's analysis cache: entries, the longest command cached, and the most an
// analysis may hold (commands, words and bytes of word text) to be kept. At most about
// analysisCacheEntries × (analysisCacheMaxBytes + what a kept Script holds) stays in memory:
// a few MiB.
const (
	analysisCacheEntries     = 2048
	analysisCacheMaxSource   = 512
	analysisCacheMaxCommands = 16
	analysisCacheMaxWords    = 64
	analysisCacheMaxBytes    = 4096
)

// verdictMemoSlots is how many passports' verdicts an analysis cache entry keeps.
const verdictMemoSlots = 4

// analysisCache keeps the shell analyses of recent short commands. Agents repeat commands (git
// status, ls, the test runner), and a shell.Script is never changed once built, so the next call
// of a command skips the parse and the analysis. Each entry also keeps the command limits' verdict
// of the last few passports that ran it without a working directory: a passport's limits never
// change within a snapshot, and the verdict depends only on them and the analysis, so the next call
// of the command under that passport skips the checks too. Entries are evicted oldest first; a
// caller that sends only new commands pays a map lookup and an insert more than with no cache.
// Failed analyses are not kept.
type analysisCache struct {
	mu    sync.Mutex
	byCmd map[string]*cachedAnalysis
	order []string // insertion order, a ring of len analysisCacheEntries
	next  int
}

// cachedAnalysis is one command's analysis and the verdicts of the passports that ran it.
type cachedAnalysis struct {
	script *shell.Script
	memo   [verdictMemoSlots]verdictMemo
	next   uint8 // the memo slot to fill next (a ring)

	celOnce     sync.Once
	celCommands ref.Val // script as call.commands, every field converted (built once, then read-only)
}

// commands returns the analysis as CEL's call.commands, built on first use and shared by every
// later decision on the command.
func (e *cachedAnalysis) commands() ref.Val {
	e.celOnce.Do(func() { e.celCommands = frozenCommandsValue(e.script) })
	return e.celCommands
}

// commandAnalysis is the guard's analysis of a call's first command: the script, and its cache
// entry when a decision found it there (then CEL reads the entry's shared value).
type commandAnalysis struct {
	script *shell.Script
	cached *cachedAnalysis
}

// verdictMemo is the verdict of one passport's limits on a command run with no working directory.
type verdictMemo struct {
	limits *passportLimits
	v      verdict
}

func newAnalysisCache() *analysisCache {
	return &analysisCache{byCmd: make(map[string]*cachedAnalysis, analysisCacheEntries)}
}

// check analyses src (or finds its analysis) and applies l's command limits to it, with the
// working directory cwd ("" when unknown). A verdict for cwd "" is kept with the analysis.
func (c *analysisCache) check(l *passportLimits, src, cwd string) (commandAnalysis, verdict) {
	if c == nil || len(src) > analysisCacheMaxSource {
		script, err := shell.Analyze(src, shellLimits)
		if err != nil {
			return commandAnalysis{}, denyWith(CodeInvalidContext, "the command cannot be analysed: %v", err)
		}
		return commandAnalysis{script: script}, l.checkScript(script, src, cwd)
	}
	c.mu.Lock()
	e := c.byCmd[src]
	if e != nil && cwd == "" {
		for i := range e.memo {
			if e.memo[i].limits == l {
				v := e.memo[i].v
				c.mu.Unlock()
				return commandAnalysis{script: e.script, cached: e}, v
			}
		}
	}
	c.mu.Unlock()
	if e != nil {
		v := l.checkScript(e.script, src, cwd)
		if cwd == "" {
			c.remember(e, l, v)
		}
		return commandAnalysis{script: e.script, cached: e}, v
	}
	script, err := shell.Analyze(src, shellLimits)
	if err != nil {
		return commandAnalysis{}, denyWith(CodeInvalidContext, "the command cannot be analysed: %v", err)
	}
	v := l.checkScript(script, src, cwd)
	if cacheable(script) {
		e = c.insert(src, script)
		if cwd == "" {
			c.remember(e, l, v)
		}
	}
	return commandAnalysis{script: script}, v
}

// remember keeps l's verdict on the entry e.
func (c *analysisCache) remember(e *cachedAnalysis, l *passportLimits, v verdict) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range e.memo {
		if e.memo[i].limits == l {
			return
		}
	}
	e.memo[e.next] = verdictMemo{limits: l, v: v}
	e.next = (e.next + 1) % verdictMemoSlots
}

// insert keeps the analysis s of src, evicting the oldest entry when the cache is full, and
// returns the entry (another caller's, when it inserted src first).
func (c *analysisCache) insert(src string, s *shell.Script) *cachedAnalysis {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byCmd[src]; ok {
		return e
	}
	if len(c.order) < analysisCacheEntries {
		c.order = append(c.order, src)
	} else {
		delete(c.byCmd, c.order[c.next])
		c.order[c.next] = src
		c.next = (c.next + 1) % analysisCacheEntries
	}
	e := &cachedAnalysis{script: s}
	c.byCmd[src] = e
	return e
}

// cacheable reports whether an analysis is small enough to keep (a short command can still expand
// to many or long words).
func cacheable(s *shell.Script) bool {
	if len(s.Commands) > analysisCacheMaxCommands {
		return false
	}
	words, size := 0, 0
	add := func(ws []shell.Word) {
		words += len(ws)
		for _, w := range ws {
			size += len(w.Value) + len(w.Pattern)
		}
	}
	for i := range s.Commands {
		c := &s.Commands[i]
		add(c.Args)
		words += len(c.Positionals)
		words += len(c.Flags) + len(c.Wrappers)
		size += len(c.Name) + len(c.Program) + len(c.Via)
		for _, f := range c.Flags {
			size += len(f)
		}
		for _, r := range c.Redirects {
			words++
			size += len(r.Target.Value) + len(r.Target.Pattern)
		}
	}
	words += len(s.Redirects)
	for _, a := range s.Assignments {
		words++
		size += len(a.Name) + len(a.Value.Value) + len(a.Value.Pattern)
	}
	return words <= analysisCacheMaxWords && size <= analysisCacheMaxBytes
}
