package policy

import (
	"sync"

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

// analysisCache keeps the shell analyses of recent short commands. Agents repeat commands (git
// status, ls, the test runner), and a shell.Script is never changed once built, so the next call
// of a command skips the parse and the analysis. Entries are evicted oldest first; a caller that
// sends only new commands pays a map lookup and an insert more than with no cache. Failed analyses
// are not kept.
type analysisCache struct {
	mu    sync.Mutex
	byCmd map[string]*shell.Script
	order []string // insertion order, a ring of len analysisCacheEntries
	next  int
}

func newAnalysisCache() *analysisCache {
	return &analysisCache{byCmd: make(map[string]*shell.Script, analysisCacheEntries)}
}

// analyze returns the analysis of src, from the cache when src was analysed recently.
func (c *analysisCache) analyze(src string) (*shell.Script, error) {
	if c == nil || len(src) > analysisCacheMaxSource {
		return shell.Analyze(src, shellLimits)
	}
	c.mu.Lock()
	s, ok := c.byCmd[src]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := shell.Analyze(src, shellLimits)
	if err != nil || !cacheable(s) {
		return s, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byCmd[src]; ok {
		return s, nil
	}
	if len(c.order) < analysisCacheEntries {
		c.order = append(c.order, src)
	} else {
		delete(c.byCmd, c.order[c.next])
		c.order[c.next] = src
		c.next = (c.next + 1) % analysisCacheEntries
	}
	c.byCmd[src] = s
	return s, nil
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
