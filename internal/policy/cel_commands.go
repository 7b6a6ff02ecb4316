package policy

import (
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/tollgate-dev/tollgate/internal/policy/paths"
	"github.com/tollgate-dev/tollgate/internal/policy/shell"
)

// celKeyName is the key of a command's program name in shell.commands() and call.commands.
const celKeyName = "name"

// commandFieldNames are the keys of one command in shell.commands() and call.commands.
var commandFieldNames = [...]string{celKeyName, "program", "dynamic", "args", "flags", "positionals", "redirects", "wrappers", "via", "code"}

// commandFieldAtKey returns the index of key in commandFieldNames.
func commandFieldAtKey(key string) (int, bool) {
	for i, k := range commandFieldNames {
		if k == key {
			return i, true
		}
	}
	return 0, false
}

// frozenCommandsValue is commandsValue with every field converted up front: a value that is never
// changed afterwards, so decisions on a cached command share it.
func frozenCommandsValue(script *shell.Script) ref.Val {
	vals := make([]ref.Val, len(script.Commands))
	frozen := make([]frozenFields, len(script.Commands))
	maps := make([]lazyMap, len(script.Commands))
	for i := range script.Commands {
		cv := commandVal{c: &script.Commands[i]}
		for j, k := range commandFieldNames {
			// String lists as lists of CEL strings: reading an element then boxes nothing.
			frozen[i].vals[j] = cv.convert(k, refStringList)
		}
		maps[i] = lazyMap{fields: &frozen[i]}
		vals[i] = &maps[i]
	}
	return types.NewRefValList(types.DefaultTypeAdapter, vals)
}

// frozenFields is one command's fields, converted (by index in commandFieldNames).
type frozenFields struct {
	vals [len(commandFieldNames)]ref.Val
}

func (f *frozenFields) fieldNames() []string { return commandFieldNames[:] }

func (f *frozenFields) field(key string) (ref.Val, bool) {
	if i, ok := commandFieldAtKey(key); ok {
		return f.vals[i], true
	}
	return nil, false
}

// commandsValue is the CEL list of a script's commands. Each command is a map whose fields are
// converted when an expression first reads them, so `c.name == 'rm'` does not build every argument
// list.
func commandsValue(script *shell.Script) ref.Val {
	vals := make([]ref.Val, len(script.Commands))
	cvs := make([]commandVal, len(script.Commands))
	maps := make([]lazyMap, len(script.Commands))
	for i := range script.Commands {
		cvs[i] = commandVal{c: &script.Commands[i]}
		maps[i] = lazyMap{fields: &cvs[i]}
		vals[i] = &maps[i]
	}
	return types.NewRefValList(types.DefaultTypeAdapter, vals)
}

// fieldSource is a read-only record whose fields are computed on demand.
type fieldSource interface {
	// field returns the CEL value of key, and whether the record has it.
	field(key string) (ref.Val, bool)
	// fieldNames lists the keys.
	fieldNames() []string
}

// lazyMap is a fieldSource as a CEL map value: a field is computed only when an expression reads it.
type lazyMap struct {
	fields fieldSource
}

var (
	_ traits.Mapper = (*lazyMap)(nil)
	_ ref.Val       = (*lazyMap)(nil)
)

// native is the record as a plain CEL map (for conversions and equality).
func (m *lazyMap) native() ref.Val {
	names := m.fields.fieldNames()
	out := make(map[ref.Val]ref.Val, len(names))
	for _, k := range names {
		f, _ := m.fields.field(k)
		out[types.String(k)] = f
	}
	return types.NewRefValMap(types.DefaultTypeAdapter, out)
}

// Find implements traits.Mapper.
func (m *lazyMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	return m.fields.field(string(k))
}

// Get implements traits.Indexer.
func (m *lazyMap) Get(key ref.Val) ref.Val {
	if f, ok := m.Find(key); ok {
		return f
	}
	return types.NewErr("no such key: %v", key)
}

// Contains implements traits.Container.
func (m *lazyMap) Contains(key ref.Val) ref.Val {
	_, ok := m.Find(key)
	return types.Bool(ok)
}

// Iterator implements traits.Iterable (over the keys).
func (m *lazyMap) Iterator() traits.Iterator {
	return types.NewStringList(types.DefaultTypeAdapter, m.fields.fieldNames()).Iterator()
}

// Size implements traits.Sizer.
func (m *lazyMap) Size() ref.Val { return types.Int(len(m.fields.fieldNames())) }

// ConvertToNative implements ref.Val.
func (m *lazyMap) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return m.native().ConvertToNative(typeDesc)
}

// ConvertToType implements ref.Val.
func (m *lazyMap) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t)
}

// Equal implements ref.Val.
func (m *lazyMap) Equal(other ref.Val) ref.Val { return m.native().Equal(other) }

// Type implements ref.Val.
func (m *lazyMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (m *lazyMap) Value() any { return m.native().Value() }

// commandVal is one analysed command (see commandFieldNames), its fields converted on first read.
// It belongs to one decision.
type commandVal struct {
	c    *shell.Command
	vals [len(commandFieldNames)]ref.Val
}

func (v *commandVal) fieldNames() []string { return commandFieldNames[:] }

// field returns the CEL value of one key.
func (v *commandVal) field(key string) (ref.Val, bool) {
	i, ok := commandFieldAtKey(key)
	if !ok {
		return nil, false
	}
	if v.vals[i] == nil {
		v.vals[i] = v.convert(key, lazyStringList)
	}
	return v.vals[i], true
}

// convert returns the CEL value of one key of commandFieldNames, its string lists made by list.
func (v *commandVal) convert(key string, list func([]string) ref.Val) ref.Val {
	c := v.c
	switch key {
	case celKeyName:
		return types.String(c.Name)
	case "program":
		return types.String(c.Program)
	case "dynamic":
		return types.Bool(c.Dynamic)
	case "args":
		return list(wordValues(c.Args))
	case "flags":
		return list(c.Flags)
	case "positionals":
		return list(wordValues(c.Positionals))
	case "redirects":
		redirects := make([]any, 0, len(c.Redirects))
		for _, r := range c.Redirects {
			redirects = append(redirects, map[string]any{"op": r.Op, "target": r.Target.Value, verbWrite: r.Write})
		}
		return types.DefaultTypeAdapter.NativeToValue(redirects)
	case "wrappers":
		return list(c.Wrappers)
	case "via":
		return types.String(c.Via)
	case "code":
		if c.Code == shell.CodeNone {
			return types.String("")
		}
		return types.String(c.Code.String())
	}
	return nil
}

// lazyStringList is a CEL list of strings converted as they are read.
func lazyStringList(ss []string) ref.Val { return types.NewStringList(types.DefaultTypeAdapter, ss) }

// wordValues returns the words' values.
func wordValues(ws []shell.Word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Value
	}
	return out
}

// refStringList is a CEL list of strings converted up front.
func refStringList(ss []string) ref.Val {
	vals := make([]ref.Val, len(ss))
	for i, s := range ss {
		vals[i] = types.String(s)
	}
	return types.NewRefValList(types.DefaultTypeAdapter, vals)
}

// callFieldNames are the keys of the CEL variable call.
var callFieldNames = []string{"paths", "urls", "command", "commands"}

// callVal is the CEL variable call: the canonical paths, the URLs and the command the call's
// arguments carry, under whichever field names the agent framework used, and that command's
// analysis (commands, as shell.commands returns it). Each field is computed when an expression first
// reads it. script is the guard's analysis of the command when it has one for this input (nil:
// analysed here when read).
type callVal struct {
	input    map[string]any
	analysis commandAnalysis
	computed [4]ref.Val // by index in callFieldNames
}

func (v *callVal) fieldNames() []string { return callFieldNames }

func (v *callVal) field(key string) (ref.Val, bool) {
	i := -1
	for j, k := range callFieldNames {
		if k == key {
			i = j
			break
		}
	}
	if i < 0 {
		return nil, false
	}
	if v.computed[i] == nil {
		v.computed[i] = v.compute(key)
	}
	return v.computed[i], true
}

func (v *callVal) compute(key string) ref.Val {
	switch key {
	case "paths":
		var pbuf [8]string
		raw, _ := stringValues(pbuf[:0], v.input, PathFields)
		ps := make([]string, 0, len(raw))
		for _, r := range raw {
			if c, err := paths.Canonical(r); err == nil {
				ps = append(ps, c)
			}
		}
		return types.NewStringList(types.DefaultTypeAdapter, ps)
	case "urls":
		us, _ := stringValues(nil, v.input, URLFields)
		return types.NewStringList(types.DefaultTypeAdapter, us)
	case "command":
		return types.String(commandText(v.input))
	}
	// commands
	if v.analysis.cached != nil {
		return v.analysis.cached.commands()
	}
	if v.analysis.script != nil {
		return commandsValue(v.analysis.script)
	}
	if cmd := commandText(v.input); cmd != "" {
		return celShellCommands(types.String(cmd))
	}
	return types.NewRefValList(types.DefaultTypeAdapter, nil)
}
