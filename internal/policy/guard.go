package policy

import (
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/internal/policy/hosts"
	"github.com/tollgate-dev/tollgate/internal/policy/paths"
	"github.com/tollgate-dev/tollgate/internal/policy/shell"
)

// OAP reason codes of the guard.
const (
	// CodeLimitExceeded denies a call outside a passport's allowed paths or domains, or over a size cap.
	CodeLimitExceeded = "oap.limit_exceeded"
	// CodeInvalidContext denies a call whose arguments cannot be analysed (a command that does not
	// parse, a path with a NUL byte, a URL that cannot be read, a field of the wrong type).
	CodeInvalidContext = "oap.invalid_context"
)

// shellLimits bound the analysis of one command string.
var shellLimits = shell.Limits{}

// How many paths and URLs one call may name (more is denied with oap.invalid_context): each is
// analysed, and CEL's call.paths and call.urls hold them (the cost estimates assume these bounds).
const (
	MaxCallPaths = 1024
	MaxCallURLs  = 256
)

// Verbs in reasons, and the key of a redirection's write flag in shell.commands().
const (
	verbRead  = "read"
	verbWrite = "write"
)

// verdict is a guard's deny (code "" lets the call through).
type verdict struct {
	code string
	msg  string
}

func denyWith(code, format string, args ...any) verdict {
	return verdict{code: code, msg: fmt.Sprintf(format, args...)}
}

// guardCall applies the passport's limits to a tool call's arguments: the shell command it carries,
// the paths and URLs it names, the size it writes. capID is the tool's capability ("" if unmapped).
// It returns the analysis of the call's first command (call.commands in CEL), if any. cache keeps
// recent analyses (nil: none); present is presentFields(input).
func (p *cPassport) guardCall(cache *analysisCache, tool, capID string, input map[string]any, present fieldKinds) (commandAnalysis, verdict) {
	first, v := p.guardCommands(cache, tool, capID, input, present)
	if v.code != "" {
		return commandAnalysis{}, v
	}
	return first, p.guardPathsAndURLs(tool, capID, input, present)
}

// guardCommands analyses the shell commands a call carries and applies the command limits. It
// returns the analysis of the first command (nil when there is none).
func (p *cPassport) guardCommands(cache *analysisCache, tool, capID string, input map[string]any, present fieldKinds) (commandAnalysis, verdict) {
	var buf [2]string
	cmds := buf[:0]
	if present&fieldCommand != 0 {
		var badCmd string
		cmds, badCmd = appendCommandTexts(cmds, input, present)
		if isEditorCall(tool, input) {
			cmds = nil // the command is an editor verb; the path is checked below
		}
		if badCmd != "" {
			return commandAnalysis{}, denyWith(CodeInvalidContext, "field %s must be a string or a list of strings", badCmd)
		}
	}
	if capID == CapCommandExecute && len(cmds) == 0 {
		return commandAnalysis{}, denyWith(CodeInvalidContext, "a shell call must carry its command in one of the fields %s", strings.Join(CommandFields, ", "))
	}
	if len(cmds) == 0 {
		return commandAnalysis{}, verdict{}
	}
	cwd := ""
	if present&fieldWorkdir != 0 {
		var v verdict
		if cwd, v = p.limits.workdir(input); v.code != "" {
			return commandAnalysis{}, v
		}
	}
	var first commandAnalysis
	for i, cmd := range cmds {
		a, v := p.limits.checkCommand(cache, cmd, cwd)
		if v.code != "" {
			return commandAnalysis{}, v
		}
		if i == 0 {
			first = a
		}
	}
	return first, verdict{}
}

// guardPathsAndURLs applies the file and web limits to the paths and URLs a call names.
func (p *cPassport) guardPathsAndURLs(tool, capID string, input map[string]any, present fieldKinds) verdict {
	var buf [8]string
	pathArgs := buf[:0]
	if present&fieldPath != 0 {
		var bad string
		if pathArgs, bad = stringValues(pathArgs, input, PathFields); bad != "" {
			return denyWith(CodeInvalidContext, "field %s must be a string or a list of strings", bad)
		}
	}
	if capID == CapFileWrite {
		pathArgs = append(pathArgs, patchPaths(input)...)
	}
	if len(pathArgs) > MaxCallPaths {
		return denyWith(CodeInvalidContext, "the call names %d paths, more than %d", len(pathArgs), MaxCallPaths)
	}
	switch capID {
	case CapFileRead:
		if v := p.limits.read.checkFileTool(pathArgs, p.limits.read.baselineSet(false), verbRead); v.code != "" {
			return v
		}
	case CapFileWrite:
		if len(pathArgs) == 0 {
			return denyWith(CodeInvalidContext, "a file write must name its path in one of the fields %s", strings.Join(PathFields, ", "))
		}
		if v := p.limits.write.checkFileTool(pathArgs, p.limits.write.baselineSet(true), verbWrite); v.code != "" {
			return v
		}
		if v := p.limits.write.checkSize(input); v.code != "" {
			return v
		}
	default:
		// Any other tool naming a path (an MCP filesystem server, a custom tool) still may not read
		// (or, when its name says it writes, write) what a file tool may not.
		if len(pathArgs) == 0 {
			break
		}
		f, write, verb := &p.limits.read, writesByName(tool), verbRead
		if write {
			f, verb = &p.limits.write, verbWrite
		}
		for _, raw := range pathArgs {
			if v := f.checkBlocked(raw, f.baselineSet(write), verb); v.code != "" {
				return v
			}
		}
	}
	var ubuf [4]string
	urls := ubuf[:0]
	if present&fieldURL != 0 {
		var bad string
		if urls, bad = stringValues(urls, input, URLFields); bad != "" {
			return denyWith(CodeInvalidContext, "field %s must be a string or a list of strings", bad)
		}
	}
	if len(urls) > MaxCallURLs {
		return denyWith(CodeInvalidContext, "the call names %d URLs, more than %d", len(urls), MaxCallURLs)
	}
	if capID == CapWebFetch && len(urls) == 0 {
		return denyWith(CodeInvalidContext, "a web fetch must name its URL in one of the fields %s", strings.Join(URLFields, ", "))
	}
	for _, raw := range urls {
		if v := p.limits.web.checkURL(raw, true); v.code != "" {
			return v
		}
	}
	return verdict{}
}

// writeWords in a tool's name say that it writes the paths it names.
var writeWords = []string{"write", "edit", "create", "delete", "remove", "move", "rename", "put", "save", "append", "mkdir", "upload", "patch", "replace", "insert"}

// writesByName reports whether a tool's name says it writes.
func writesByName(tool string) bool {
	t := strings.ToLower(tool)
	for _, w := range writeWords {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// WorkdirFields are the tool-input fields naming the directory a shell command runs in.
var WorkdirFields = []string{"workdir", "cwd", "working_directory", "workingDirectory", "working_dir", "directory", "dir"}

// workdir returns the canonical working directory a shell call names ("" when none), checked
// against the read limits like any path the command reads.
func (l *passportLimits) workdir(input map[string]any) (string, verdict) {
	for _, f := range WorkdirFields {
		s, ok := input[f].(string)
		if !ok || s == "" {
			continue
		}
		c, err := paths.Canonical(s)
		if err != nil {
			return "", denyWith(CodeInvalidContext, "field %s cannot be analysed: %v", f, err)
		}
		if v := l.read.checkBlocked(c, l.read.baselineSet(false), verbRead); v.code != "" {
			return "", v
		}
		if strings.HasPrefix(c, "..") {
			return "*", verdict{}
		}
		return c, verdict{}
	}
	return "", verdict{}
}

// baselineSet returns the sensitive baseline that applies (nil when the passport turned it off).
func (f *fileLimits) baselineSet(write bool) *paths.Set {
	if !f.baseline {
		return nil
	}
	if write {
		return paths.BaselineWrite()
	}
	return paths.BaselineRead()
}

// checkFileTool applies allowed_paths, blocked_paths and the baseline to a file tool's paths.
func (f *fileLimits) checkFileTool(raw []string, baseline *paths.Set, verb string) verdict {
	for _, r := range raw {
		if v := f.checkBlocked(r, baseline, verb); v.code != "" {
			return v
		}
		if f.allowed != nil {
			// An allow list must certainly cover the path (Match answers "could be", for block lists).
			c, _ := paths.Canonical(r)
			if _, ok := f.allowed.Covers(c); !ok {
				return denyWith(CodeLimitExceeded, "the path is outside the passport's allowed_paths for %s", verb)
			}
		}
	}
	return verdict{}
}

// checkBlocked canonicalises one path and checks it against blocked_paths and the baseline.
func (f *fileLimits) checkBlocked(raw string, baseline *paths.Set, verb string) verdict {
	c, err := paths.Canonical(raw)
	if err != nil {
		return denyWith(CodeInvalidContext, "a path cannot be analysed: %v", err)
	}
	if f.blocked != nil {
		if pat, ok := f.blocked.Match(c); ok {
			return denyWith(CodeBlockedPattern, "the path matches blocked path %q", pat.String())
		}
	}
	if baseline != nil {
		if pat, ok := baseline.Match(c); ok {
			return denyWith(CodeBlockedPattern, "the path is sensitive (%s baseline %q)", verb, pat.String())
		}
	}
	return verdict{}
}

// checkSize applies max_file_bytes to the content a write carries.
func (f *fileLimits) checkSize(input map[string]any) verdict {
	if f.maxBytes <= 0 {
		return verdict{}
	}
	var n int64
	for _, k := range ContentFields {
		if s, ok := input[k].(string); ok {
			n += int64(len(s))
		}
	}
	if n > f.maxBytes {
		return denyWith(CodeLimitExceeded, "the write carries %d bytes, over the passport's max_file_bytes %d", n, f.maxBytes)
	}
	return verdict{}
}

// patchPaths returns the file paths named by an apply_patch style patch (unified diff headers and
// the "*** Update File:" envelope).
func patchPaths(input map[string]any) []string {
	var out []string
	for _, k := range []string{"patch", "input", "diff"} {
		s, ok := input[k].(string)
		if !ok {
			continue
		}
		for line := range strings.SplitSeq(s, "\n") {
			line = strings.TrimRight(line, "\r")
			for _, prefix := range []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ", "+++ ", "--- "} {
				if rest, ok := strings.CutPrefix(line, prefix); ok {
					rest = strings.TrimSpace(rest)
					if i := strings.IndexByte(rest, '\t'); i >= 0 {
						rest = rest[:i]
					}
					if prefix == "+++ " || prefix == "--- " {
						if rest == "/dev/null" {
							continue
						}
						rest = strings.TrimPrefix(strings.TrimPrefix(rest, "a/"), "b/")
					}
					out = append(out, rest)
				}
			}
		}
	}
	return out
}

// checkURL applies the passport's web limits and the default block of internal addresses to one
// URL. strict denies what cannot be parsed; otherwise unparsable words are ignored (a curl argument
// that is not a URL).
func (w *webLimits) checkURL(raw string, strict bool) verdict {
	u, err := hosts.ParseURL(raw)
	if err != nil {
		if strict || hosts.LooksLikeURL(raw) {
			return denyWith(CodeInvalidContext, "a URL cannot be analysed: %v", err)
		}
		return verdict{}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return denyWith(CodeBlockedPattern, "URL scheme %q is not allowed (http and https only)", clipName(u.Scheme))
	}
	if w.blocked != nil {
		if entry, ok := w.blocked.Match(u); ok {
			return denyWith(CodeBlockedPattern, "the URL's host matches blocked domain %q", entry)
		}
	}
	if w.allowed != nil {
		if _, ok := w.allowed.Match(u); ok {
			return verdict{}
		}
		return denyWith(CodeLimitExceeded, "the URL's host is outside the passport's allowed_domains")
	}
	if why := hosts.BlockedReason(u); why != "" {
		return denyWith(CodeBlockedPattern, "the URL's host is a %s address, blocked unless allowed_domains names it", why)
	}
	return verdict{}
}

// nameChar reports the bytes a quoted program or scheme name may hold.
func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._+-:[", c) >= 0
}

// clipName makes a program or scheme name safe to quote in a reason: at most 64 characters of
// [A-Za-z0-9._+-], else "(unprintable)".
func clipName(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	for i := 0; i < len(s); i++ {
		if !nameChar(s[i]) {
			return "(unprintable)"
		}
	}
	return s
}
