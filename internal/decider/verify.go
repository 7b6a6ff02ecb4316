package decider

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// verifyPack is an OAP policy pack the verify route (POST /api/verify/policy/{policy_id}) knows: the
// capability its id names, the tool a call under it is decided as, and what its context must carry.
// The engine's checks for the capability (the shell analysis, canonical paths, canonical URL hosts)
// run on what prepare hands it; a context without what the pack needs is a 400 naming the field,
// never a call decided without those checks.
type verifyPack struct {
	// capability is the OAP capability the pack governs.
	capability string
	// tool is the tool name the call is decided as when the context names none.
	tool string
	// prepare checks the tool input (the context without the identifying keys) and returns it, possibly
	// rewritten, with the tool name; named is the tool the context named ("" when none) and namedFrom
	// the context key it came from.
	prepare func(p *verifyPack, policyID string, input map[string]any, named, namedFrom string) (string, map[string]any, *RequestError)
}

// verifyPacks are the OAP policy packs the verify route knows, by policy id. Any other policy id
// restricts evaluation to the policies of that id, and the tool must be named in the context.
var verifyPacks = map[string]*verifyPack{
	"system.command.execute.v1": {capability: policy.CapCommandExecute, tool: "bash", prepare: prepareCommand},
	"data.file.read.v1":         {capability: policy.CapFileRead, tool: "read_file", prepare: preparePath},
	"data.file.write.v1":        {capability: policy.CapFileWrite, tool: "write_file", prepare: preparePath},
	"web.fetch.v1":              {capability: policy.CapWebFetch, tool: "web_fetch", prepare: prepareURL},
	"mcp.tool.execute.v1":       {capability: policy.CapMCPToolExecute, prepare: prepareMCP},
}

// VerifyPacks returns the policy ids of the OAP policy packs the verify route knows, sorted.
func VerifyPacks() []string {
	ids := make([]string, 0, len(verifyPacks))
	for id := range verifyPacks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// packTool returns the tool name a call under p is decided as: the pack's own, or the one the
// context named when the engine's built-in table maps it to the pack's capability (so that rules
// written for "Bash" or "Read" still match). A tool of another capability is refused: it would
// decide the call under other checks than the pack's.
func (p *verifyPack) packTool(policyID, named, namedFrom string) (string, *RequestError) {
	if named == "" {
		return p.tool, nil
	}
	if c, ok := policy.BuiltinToolCapability(named); !ok || c != p.capability {
		return "", fieldErr(ErrCodeInvalidField, namedFrom, "tool %q is not a %s tool: policy pack %s decides the call as %s; name a tool of that capability, or none",
			clip(named), p.capability, policyID, p.tool)
	}
	return named, nil
}

// prepareCommand: system.command.execute.v1 needs the shell command (context.command, or another of
// the fields the engine reads as one). OAP's context.args are the command's arguments: they are
// appended to the command, each quoted as one shell word, so that the command checks see the whole
// command line ("sh" with args ["-c", "sudo rm -rf /"] is checked as sh -c 'sudo rm -rf /').
func prepareCommand(p *verifyPack, policyID string, input map[string]any, named, namedFrom string) (string, map[string]any, *RequestError) {
	tool, rerr := p.packTool(policyID, named, namedFrom)
	if rerr != nil {
		return "", nil, rerr
	}
	first := ""
	for _, f := range policy.CommandFields {
		v, ok := input[f]
		if !ok {
			continue
		}
		switch t := v.(type) {
		case string:
			if strings.TrimSpace(t) == "" {
				return "", nil, fieldErr(ErrCodeMissingField, "context."+f, "is blank: want the shell command to check (policy pack %s)", policyID)
			}
		case []any:
			if len(t) == 0 {
				return "", nil, fieldErr(ErrCodeMissingField, "context."+f, "is empty: want the command's argv (policy pack %s)", policyID)
			}
			for i, x := range t {
				if _, ok := x.(string); !ok {
					return "", nil, fieldErr(ErrCodeInvalidField, "context."+f+"["+strconv.Itoa(i)+"]", "want a string")
				}
			}
		default:
			return "", nil, fieldErr(ErrCodeInvalidField, "context."+f, "want a string (a shell command) or an array of strings (argv)")
		}
		if first == "" {
			first = f
		}
	}
	if first == "" {
		return "", nil, fieldErr(ErrCodeMissingField, "context.command", "required by policy pack %s: the shell command to check (or one of %s)",
			policyID, strings.Join(policy.CommandFields[1:], ", "))
	}
	if v, ok := input["args"]; ok {
		args, isList := v.([]any)
		if !isList {
			return "", nil, fieldErr(ErrCodeInvalidField, "context.args", "want an array of strings (the command's arguments)")
		}
		words := make([]string, 0, len(args))
		for i, x := range args {
			s, ok := x.(string)
			if !ok {
				return "", nil, fieldErr(ErrCodeInvalidField, "context.args["+strconv.Itoa(i)+"]", "want a string")
			}
			words = append(words, s)
		}
		switch c := input[first].(type) {
		case string:
			// With args, the command is the program (OAP: "npm" with args ["install"]); a command
			// line would be read differently by the checks and by an executor (a trailing "#" or
			// backslash swallows the arguments).
			if shellWord(c) != c || strings.Contains(c, "=") {
				return "", nil, fieldErr(ErrCodeInvalidField, "context."+first, "with context.args, want a program name (letters, digits, -_./:,+@%%); give a whole command line without args")
			}
			line := c
			for _, w := range words {
				line += " " + shellWord(w)
			}
			input[first] = line
		case []any:
			argv := append(slices.Clip(c), args...)
			input[first] = argv
		}
		delete(input, "args")
	}
	return tool, input, nil
}

// preparePath: data.file.read.v1 and data.file.write.v1 need the file's path (context.file_path, or
// another of the fields the engine reads as paths).
func preparePath(p *verifyPack, policyID string, input map[string]any, named, namedFrom string) (string, map[string]any, *RequestError) {
	tool, rerr := p.packTool(policyID, named, namedFrom)
	if rerr != nil {
		return "", nil, rerr
	}
	if rerr := needStrings(input, policy.PathFields, "file_path", "the file's path", policyID); rerr != nil {
		return "", nil, rerr
	}
	if rerr := refuseCommand(p, policyID, tool, input); rerr != nil {
		return "", nil, rerr
	}
	return tool, input, nil
}

// prepareURL: web.fetch.v1 needs the URL (context.url, or another of the fields the engine reads as
// URLs).
func prepareURL(p *verifyPack, policyID string, input map[string]any, named, namedFrom string) (string, map[string]any, *RequestError) {
	tool, rerr := p.packTool(policyID, named, namedFrom)
	if rerr != nil {
		return "", nil, rerr
	}
	if rerr := needStrings(input, policy.URLFields, "url", "the URL to fetch", policyID); rerr != nil {
		return "", nil, rerr
	}
	if rerr := refuseCommand(p, policyID, tool, input); rerr != nil {
		return "", nil, rerr
	}
	return tool, input, nil
}

// editorTools are the text-editor tools whose command field is an editor verb (the engine reads
// view as a file read and the other verbs as writes), not a shell command.
var editorTools = map[string]bool{"str_replace_editor": true, "str_replace_based_edit_tool": true, "developer__text_editor": true}

// editorVerbs are their verbs, each with the capability the engine decides it under.
var editorVerbs = map[string]string{
	"view": policy.CapFileRead, "create": policy.CapFileWrite, "str_replace": policy.CapFileWrite,
	"insert": policy.CapFileWrite, "undo_edit": policy.CapFileWrite, "write": policy.CapFileWrite,
}

// refuseCommand refuses a command field in the context of a file or web pack: the engine decides
// any call carrying a command as a shell call, whose path checks are not the file pack's (a read
// of a path outside allowed_paths would pass as "ls" with a file_path beside it). An editor tool's
// verb is no shell command, and is accepted when the engine decides it under the pack's capability.
func refuseCommand(p *verifyPack, policyID, tool string, input map[string]any) *RequestError {
	for _, f := range policy.CommandFields {
		v, ok := input[f]
		if !ok {
			continue
		}
		if verb, isStr := v.(string); f == "command" && isStr && editorTools[tool] && editorVerbs[verb] == p.capability {
			continue
		}
		return fieldErr(ErrCodeInvalidField, "context."+f, "policy pack %s checks a %s call, which carries no shell command: verify a command under system.command.execute.v1",
			policyID, p.capability)
	}
	return nil
}

// needStrings checks that input carries at least one of fields, and that each of them it carries is
// a non-empty string or a non-empty array of non-empty strings; want names the field reported missing.
func needStrings(input map[string]any, fields []string, want, what, policyID string) *RequestError {
	found := false
	for _, f := range fields {
		v, ok := input[f]
		if !ok {
			continue
		}
		switch t := v.(type) {
		case string:
			if t == "" {
				return fieldErr(ErrCodeMissingField, "context."+f, "is empty: want %s (policy pack %s)", what, policyID)
			}
		case []any:
			if len(t) == 0 {
				return fieldErr(ErrCodeMissingField, "context."+f, "is empty: want %s (policy pack %s)", what, policyID)
			}
			for i, x := range t {
				if s, ok := x.(string); !ok || s == "" {
					return fieldErr(ErrCodeInvalidField, "context."+f+"["+strconv.Itoa(i)+"]", "want a non-empty string")
				}
			}
		default:
			return fieldErr(ErrCodeInvalidField, "context."+f, "want a string or an array of strings")
		}
		found = true
	}
	if !found {
		others := make([]string, 0, len(fields))
		for _, f := range fields {
			if f != want {
				others = append(others, f)
			}
		}
		return fieldErr(ErrCodeMissingField, "context."+want, "required by policy pack %s: %s (or one of %s)", policyID, what, strings.Join(others, ", "))
	}
	return nil
}

// prepareMCP: mcp.tool.execute.v1 needs the MCP server and tool (context.server, context.tool); the
// call is decided as the tool mcp__<server>__<tool>, the name agent frameworks give MCP tools, and
// its input is context.parameters (the MCP tool's arguments) together with the rest of the context,
// so that the paths, URLs and commands among the arguments are checked as on any tool call. A key in
// both with different values is refused.
func prepareMCP(p *verifyPack, policyID string, input map[string]any, named, namedFrom string) (string, map[string]any, *RequestError) {
	server, rerr := mcpName(input, "server", "the MCP server", policyID)
	if rerr != nil {
		return "", nil, rerr
	}
	if strings.Contains(server, "__") {
		return "", nil, fieldErr(ErrCodeInvalidField, "context.server", "must not contain \"__\": the tool name mcp__<server>__<tool> would be ambiguous")
	}
	mtool, rerr := mcpName(input, "tool", "the MCP tool", policyID)
	if rerr != nil {
		return "", nil, rerr
	}
	tool := "mcp__" + server + "__" + mtool
	if len(tool) > maxNameLen {
		return "", nil, fieldErr(ErrCodeInvalidField, "context.tool", "server and tool names together are longer than %d characters", maxNameLen-len("mcp____"))
	}
	if named != "" && named != tool {
		return "", nil, fieldErr(ErrCodeInvalidField, namedFrom, "%q conflicts with context.server and context.tool (%q): give one value", clip(named), clip(tool))
	}
	delete(input, "server")
	delete(input, "tool")
	var params map[string]any
	if v, ok := input["parameters"]; ok {
		m, isObj := v.(map[string]any)
		if !isObj {
			return "", nil, fieldErr(ErrCodeInvalidField, "context.parameters", "want an object (the MCP tool's arguments)")
		}
		params = m
		delete(input, "parameters")
	}
	merged := make(map[string]any, len(params)+len(input))
	for k, v := range params {
		merged[k] = v
	}
	keys := make([]string, 0, len(input))
	for k := range input {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if pv, dup := merged[k]; dup && !reflect.DeepEqual(pv, input[k]) {
			return "", nil, fieldErr(ErrCodeInvalidField, "context."+k, "conflicts with context.parameters.%s: give one value", k)
		}
		merged[k] = input[k]
	}
	return tool, merged, nil
}

// mcpName takes a required name (no spaces or control characters) out of the context.
func mcpName(input map[string]any, key, what, policyID string) (string, *RequestError) {
	v, ok := input[key]
	if !ok {
		return "", fieldErr(ErrCodeMissingField, "context."+key, "required by policy pack %s: %s", policyID, what)
	}
	s, isStr := v.(string)
	switch {
	case !isStr:
		return "", fieldErr(ErrCodeInvalidField, "context."+key, "want a string")
	case s == "":
		return "", fieldErr(ErrCodeMissingField, "context."+key, "is empty: want %s (policy pack %s)", what, policyID)
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "", fieldErr(ErrCodeInvalidField, "context."+key, "must not contain spaces or control characters")
	}
	return s, nil
}

// shellWord quotes s as one shell word (the engine's argv quoting).
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, needsShellQuote) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// needsShellQuote reports whether r is not safe unquoted in a shell word.
func needsShellQuote(r rune) bool {
	safe := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)
	return !safe
}
