package policy

import "strings"

// builtinToolCapabilities maps the tool names that agent frameworks really use to OAP capabilities
// (a policy's toolCapabilities override it). A tool whose input carries a command field is a shell
// call whatever its name (see commandText), so a shell tool missing from this table is no bypass.
var builtinToolCapabilities = map[string]string{
	// Shells: Claude Code, DeerFlow, Cursor, Cline, Gemini CLI, Codex, OpenHands, OpenAI, Goose, Aider.
	"bash": CapCommandExecute, "Bash": CapCommandExecute, "shell": CapCommandExecute, "Shell": CapCommandExecute,
	"sh": CapCommandExecute, "zsh": CapCommandExecute, "terminal": CapCommandExecute, "Terminal": CapCommandExecute,
	"run_terminal_cmd": CapCommandExecute, "run_terminal_command": CapCommandExecute,
	"execute_command": CapCommandExecute, "run_shell_command": CapCommandExecute, "exec_command": CapCommandExecute,
	"run_command": CapCommandExecute, "execute_bash": CapCommandExecute, "local_shell": CapCommandExecute,
	"shell_exec": CapCommandExecute, "exec": CapCommandExecute, "run_bash": CapCommandExecute, "bash_tool": CapCommandExecute, "BashOutput": CapCommandExecute,
	"container.exec": CapCommandExecute, "developer__shell": CapCommandExecute,

	// Reading files and directories.
	"read_file": CapFileRead, "Read": CapFileRead, "ls": CapFileRead, "LS": CapFileRead,
	"view": CapFileRead, "open_file": CapFileRead,
	"read_many_files": CapFileRead, "list_directory": CapFileRead, "list_dir": CapFileRead,
	"list_files": CapFileRead, "glob": CapFileRead, "Glob": CapFileRead, "grep": CapFileRead,
	"Grep": CapFileRead, "grep_search": CapFileRead, "file_search": CapFileRead, "search_files": CapFileRead,
	"read_text_file": CapFileRead, "NotebookRead": CapFileRead,

	// Writing or editing files.
	"write_file": CapFileWrite, "Write": CapFileWrite, "create_file": CapFileWrite,
	"write_to_file": CapFileWrite, "edit_file": CapFileWrite, "Edit": CapFileWrite, "MultiEdit": CapFileWrite,
	"replace_in_file": CapFileWrite, "str_replace": CapFileWrite,
	"str_replace_editor": CapFileWrite, "str_replace_based_edit_tool": CapFileWrite,
	"apply_patch": CapFileWrite, "NotebookEdit": CapFileWrite,
	"delete_file": CapFileWrite, "move_file": CapFileWrite, "rename_file": CapFileWrite,
	"create_directory": CapFileWrite, "developer__text_editor": CapFileWrite,

	// The web.
	"web_fetch": CapWebFetch, "WebFetch": CapWebFetch, "fetch": CapWebFetch, "fetch_url": CapWebFetch,
	"http_request": CapWebFetch, "http_get": CapWebFetch, "browse": CapWebFetch, "open_url": CapWebFetch,
	"web_search": CapWebSearch, "WebSearch": CapWebSearch, "google_web_search": CapWebSearch, "tavily_search": CapWebSearch,

	// Sub-agents.
	"task": CapAgentSessionCreate, "Task": CapAgentSessionCreate, "Agent": CapAgentSessionCreate,
	"spawn_agent": CapAgentSessionCreate,
}

// builtinToolCapabilityGlobs are the built-in glob mappings, checked after the exact names.
var builtinToolCapabilityGlobs = []struct {
	glob glob
	cap  string
}{
	{compileGlob("mcp__*"), CapMCPToolExecute},
}

// BuiltinToolCapability returns the built-in capability of a tool name, if any.
func BuiltinToolCapability(tool string) (string, bool) {
	if c, ok := builtinToolCapabilities[tool]; ok {
		return c, true
	}
	for i := range builtinToolCapabilityGlobs {
		if builtinToolCapabilityGlobs[i].glob.match(tool) {
			return builtinToolCapabilityGlobs[i].cap, true
		}
	}
	return "", false
}

// CommandFields are the tool-input fields read as a shell command, in order; a tool whose input
// carries one of them (a string, or an argv list) is analysed as a shell call whatever its name.
var CommandFields = []string{"command", "cmd", "script", "shell_command", "command_line", "commandLine", "bash_command"}

// PathFields are the tool-input fields read as file paths (a string or a list of strings).
var PathFields = []string{
	"path", "file_path", "filePath", "filepath", "filename", "file", "file_name", "fileName",
	"target_file", "targetFile", "notebook_path", "absolute_path", "relative_path", "dir_path",
	"directory", "dir", "source", "destination", "src", "dst", "target", "old_path", "new_path",
	"paths", "files", "file_paths",
}

// URLFields are the tool-input fields read as URLs (a string or a list of strings).
var URLFields = []string{"url", "uri", "href", "link", "urls", "endpoint"}

// ContentFields are the tool-input fields whose size counts against max_file_bytes.
var ContentFields = []string{"content", "contents", "file_text", "new_string", "new_str", "text", "data", "patch", "new_source"}

// editorTools are text-editor tools whose command field is an editor verb, not a shell command.
var editorTools = map[string]bool{
	"str_replace_editor": true, "str_replace_based_edit_tool": true, "developer__text_editor": true, "text_editor": true,
}

// editorVerbs are the commands of editorTools.
var editorVerbs = map[string]bool{"view": true, "create": true, "str_replace": true, "insert": true, "undo_edit": true, "write": true}

// isEditorCall reports a text-editor tool call whose command is an editor verb.
func isEditorCall(tool string, input map[string]any) bool {
	if !editorTools[tool] {
		return false
	}
	v, _ := input["command"].(string)
	return editorVerbs[v]
}

// commandTexts returns every shell command a tool input carries: each CommandFields entry that is
// a string, or an argv list joined with shell quoting (Codex's ["bash", "-lc", "…"]). bad names a
// command field of another type.
func commandTexts(input map[string]any) (cmds []string, bad string) {
	return appendCommandTexts(nil, input, presentFields(input))
}

// appendCommandTexts appends to cmds the commands of the CommandFields that present (presentFields
// of input) says input carries, in CommandFields' order (see commandTexts).
func appendCommandTexts(cmds []string, input map[string]any, present fieldKinds) ([]string, string) {
	for i, f := range CommandFields {
		if present&commandFieldAt(i) == 0 {
			continue
		}
		switch t := input[f].(type) {
		case string:
			cmds = append(cmds, t)
		case []any:
			parts := make([]string, 0, len(t))
			for _, x := range t {
				s, ok := x.(string)
				if !ok {
					return nil, f
				}
				parts = append(parts, shellQuote(s))
			}
			cmds = append(cmds, strings.Join(parts, " "))
		case nil:
		default:
			return nil, f
		}
	}
	return cmds, ""
}

// commandText returns the first command a tool input carries ("" when none).
func commandText(input map[string]any) string {
	cmds, _ := commandTexts(input)
	if len(cmds) == 0 {
		return ""
	}
	return cmds[0]
}

// shellQuote quotes s as one shell word.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune("-_./=:,+@%", r)
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// stringValues appends the strings of the named fields of input (strings or lists of strings);
// bad reports a present field of another type.
func stringValues(dst []string, input map[string]any, fields []string) (out []string, bad string) {
	for _, f := range fields {
		switch t := input[f].(type) {
		case nil:
		case string:
			dst = append(dst, t)
		case []any:
			for _, x := range t {
				s, ok := x.(string)
				if !ok {
					return dst, f
				}
				dst = append(dst, s)
			}
		case []string:
			dst = append(dst, t...)
		default:
			return dst, f
		}
	}
	return dst, ""
}
