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
	use := c != nil && len(src) <= analysisCacheMaxSource
	var e *cachedAnalysis
	if use {
		c.mu.Lock()
		e = c.byCmd[src]
		if e != nil && cwd == "" {
			if v, ok := e.verdictOf(l); ok {
				c.mu.Unlock()
				return commandAnalysis{script: e.script, cached: e}, v
			}
		}
		c.mu.Unlock()
	}
	a := commandAnalysis{cached: e}
	if e != nil {
		a.script = e.script
	} else {
		script, err := shell.Analyze(src, shellLimits)
		if err != nil {
			return commandAnalysis{}, denyWith(CodeInvalidContext, "the command cannot be analysed: %v", err)
		}
		a.script = script
	}
	v := l.checkScript(a.script, src, cwd)
	if use && (e != nil || cacheable(a.script)) {
		c.keep(src, a.script, e, l, v, cwd == "")
	}
	return a, v
}

// verdictOf returns the verdict kept for l (c.mu held).
func (e *cachedAnalysis) verdictOf(l *passportLimits) (verdict, bool) {
	for i := range e.memo {
		if e.memo[i].limits == l {
			return e.memo[i].v, true
		}
	}
	return verdict{}, false
}

// keep stores the analysis s of src as a new entry when e is nil, evicting the oldest entry when
// the cache is full (or takes the entry another caller stored meanwhile), and with withVerdict
// keeps l's verdict v on the entry.
func (c *analysisCache) keep(src string, s *shell.Script, e *cachedAnalysis, l *passportLimits, v verdict, withVerdict bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e == nil {
		e = c.byCmd[src]
	}
	if e == nil {
		if len(c.order) < analysisCacheEntries {
			c.order = append(c.order, src)
		} else {
			delete(c.byCmd, c.order[c.next])
			c.order[c.next] = src
			c.next = (c.next + 1) % analysisCacheEntries
		}
		e = &cachedAnalysis{script: s}
		c.byCmd[src] = e
	}
	if !withVerdict {
		return
	}
	if _, ok := e.verdictOf(l); !ok {
		e.memo[e.next] = verdictMemo{limits: l, v: v}
		e.next = (e.next + 1) % verdictMemoSlots
	}
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
